import { Effect } from "effect"
import type { StoreError, ValidationError } from "../../domain/errors.js"
import { InvalidInput } from "../../domain/admission.js"
import { type CostEstimate, estimateCost, isExactCost } from "../../domain/pricing.js"
import type { Caller } from "../Auth.js"
import type { ModelAccessDenied, ModelNotFound } from "../../domain/catalog.js"
import type { ResolvedModel } from "../Catalog.js"
import { requireModel } from "./checks.js"
import type { JobsDeps } from "./deps.js"

/** The price of this input; one that no balance could hold (or not a number at all) is refused. */
const priced = (
  { config }: Pick<JobsDeps, "config">,
  caller: Caller,
  resolved: ResolvedModel,
  input: Readonly<Record<string, unknown>>
): Effect.Effect<CostEstimate, InvalidInput> => {
  const estimate = estimateCost(resolved.version.pricing, caller.account.discounts, resolved.model.slug, config.creditMicroCents, input)
  return isExactCost(estimate)
    ? Effect.succeed(estimate)
    : Effect.fail(new InvalidInput({ message: "The input prices the job beyond the largest amount an account can hold" }))
}

/**
 * The model and version a submit or estimate names, and the price of its input, checked as
 * submit checks it. Only an estimate may leave the input out (the spec makes it optional
 * there): it is then priced from the components' defaults, with nothing to validate.
 */
export const quote = (
  deps: Pick<JobsDeps, "catalog" | "config">,
  caller: Caller,
  request: { readonly model: string; readonly version?: string | undefined },
  input: Readonly<Record<string, unknown>> | undefined
): Effect.Effect<
  { readonly resolved: ResolvedModel; readonly cost: CostEstimate },
  ValidationError | ModelNotFound | ModelAccessDenied | InvalidInput | StoreError
> =>
  Effect.gen(function*() {
    yield* requireModel(request.model)
    const resolved = yield* deps.catalog.resolve(caller.account, request.model, request.version)
    if (input !== undefined) yield* deps.catalog.validateInput(resolved, input)
    return { resolved, cost: yield* priced(deps, caller, resolved, input ?? {}) }
  })
