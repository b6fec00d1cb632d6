import { Effect } from "effect"
import type { ModelAccessDenied, ModelNotFound } from "../../domain/catalog.js"
import type { InvalidInput } from "../../domain/admission.js"
import type { OperationNotAllowed } from "../../domain/accessRefusals.js"
import type { StoreError, ValidationError } from "../../domain/errors.js"
import type { CostEstimate } from "../../domain/pricing.js"
import { type Caller, requireScope } from "../Auth.js"
import type { JobsDeps } from "./deps.js"
import { quote } from "./quote.js"

/** What a submit of this request would cost, with the same checks as submit, so an estimate never prices what submit would refuse. */
export const estimate = (deps: Pick<JobsDeps, "catalog" | "config">) =>
(
  caller: Caller,
  request: {
    readonly model: string
    readonly version?: string | undefined
    readonly input?: Readonly<Record<string, unknown>> | undefined
  }
): Effect.Effect<
  { readonly estimate: CostEstimate; readonly deprecated: boolean; readonly sunsetAt: string | undefined },
  OperationNotAllowed | ValidationError | ModelNotFound | ModelAccessDenied | InvalidInput | StoreError
> =>
  Effect.gen(function*() {
    yield* requireScope(caller, "check_status")
    const { cost, resolved } = yield* quote(deps, caller, request, request.input)
    return { estimate: cost, deprecated: resolved.version.status === "deprecated", sunsetAt: resolved.version.sunsetAt }
  })
