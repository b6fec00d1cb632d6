import { Option, Schema } from "effect"
import type { ProviderFacts } from "../../../src/domain/failureTaxonomy.js"
import { HTTP_RETRY_RULES, jsonOf, type ProviderApi } from "../providerHttp.js"
import { FalError } from "./schema.js"

const decodeError = Schema.decodeUnknownOption(FalError)

/** `detail` as a line: a string, or model errors' "loc: msg" entries. */
const detailOf = (body: unknown): string | undefined => {
  const decoded = decodeError(body)
  if (Option.isNone(decoded)) return undefined
  const { detail } = decoded.value
  if (typeof detail === "string") return detail
  if (Array.isArray(detail)) {
    return detail.map((entry) => {
      const { loc, msg } = (entry ?? {}) as { readonly loc?: unknown; readonly msg?: unknown }
      const where = Array.isArray(loc) ? loc.join(".") : undefined
      return `${where === undefined ? "" : `${where}: `}${typeof msg === "string" ? msg : JSON.stringify(entry)}`
    }).join("; ")
  }
  return detail === undefined ? undefined : JSON.stringify(detail)
}

/**
 * What a fal error says beside its status: its type (a request error's `error_type`, else the
 * first model error's `type`, else the `X-Fal-Error-Type` header, which names only the kind,
 * `model_error`, for model errors), and whether any model error is a `content_policy_violation`.
 */
export const falErrorFacts = (body: unknown, headers: Readonly<Record<string, string>>): ProviderFacts => {
  const decoded = Option.getOrUndefined(decodeError(body))
  const types = Array.isArray(decoded?.detail)
    ? decoded.detail.flatMap((entry) => {
      const type = (entry ?? {} as { readonly type?: unknown }).type
      return typeof type === "string" ? [type] : []
    })
    : []
  const providerCode = decoded?.error_type ?? types[0] ?? headers["x-fal-error-type"]
  return {
    ...(providerCode === undefined ? {} : { providerCode }),
    ...(types.includes("content_policy_violation") ? { contentBlocked: true } : {})
  }
}

/** fal.ai's answers as the shared HTTP exchange reads them: `detail` errors, HTTP's retry rules. */
export const falApi = (apiKeys: ReadonlyArray<string>): ProviderApi => ({
  name: "fal.ai",
  secrets: apiKeys,
  errorMessage: detailOf,
  errorFacts: falErrorFacts,
  ...HTTP_RETRY_RULES
})

/**
 * An error answer to a completed request's result that is the request's own outcome (a model's
 * validation error, a request error with `error_type`, a cancellation): the generation failed.
 * Only 429 and a 5xx that is not such an outcome are worth asking again.
 */
export const isRequestOutcome = (status: number, text: string): boolean =>
  status !== 429 && (status < 500 || Option.isSome(Option.flatMap(decodeError(jsonOf(text)), (error) => Option.fromNullishOr(error.error_type))))
