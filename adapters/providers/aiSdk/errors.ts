import { APICallError } from "@ai-sdk/provider"
import { parseRetryAfterMs } from "../../../src/domain/retryAfter.js"
import { type ProviderError, ProviderRejected, ProviderUnreachable } from "../../../src/ports/Provider.js"
import { neverSent } from "../providerHttp.js"

/** AI SDK errors raised before a request is sent: the call itself is wrong, and asking again cannot help. */
const REFUSED_BEFORE_SENDING = new Set([
  "AI_InvalidArgumentError",
  "AI_UnsupportedFunctionalityError",
  "AI_InvalidPromptError",
  "AI_LoadAPIKeyError",
  "AI_LoadSettingError",
  "AI_NoSuchModelError"
])

const header = (headers: Readonly<Record<string, string>> | undefined, name: string): string | undefined =>
  Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1]

/** `retry-after-ms` (OpenAI's, which the AI SDK honours too) or `Retry-After`. */
const retryAfterMs = (headers: Readonly<Record<string, string>> | undefined, nowMs: number): number | undefined => {
  const ms = header(headers, "retry-after-ms")
  if (ms !== undefined && ms.trim() !== "" && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms)
  return parseRetryAfterMs(header(headers, "retry-after"), nowMs)
}

const nameOf = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && typeof (error as { name?: unknown }).name === "string" ? (error as { name: string }).name : undefined

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const stringAt = (value: unknown, key: string): string | undefined => {
  const found = typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined
  return typeof found === "string" && found !== "" ? found : undefined
}

/**
 * The provider's own error code in an AI SDK call's error body, as the provider packages' APIs
 * send it: `{ error: { code | type | status } }` (OpenAI, Google, OpenRouter and most others),
 * fal's `error_type` or first `detail[].type`.
 */
export const providerCodeIn = (responseBody: string | undefined): string | undefined => {
  if (responseBody === undefined) return undefined
  let body: unknown
  try {
    body = JSON.parse(responseBody)
  } catch {
    return undefined
  }
  const error = typeof body === "object" && body !== null ? (body as Record<string, unknown>)["error"] : undefined
  const detail = typeof body === "object" && body !== null ? (body as Record<string, unknown>)["detail"] : undefined
  return stringAt(error, "code") ?? stringAt(error, "type") ?? stringAt(error, "status") ?? stringAt(body, "error_type") ??
    (Array.isArray(detail) ? stringAt(detail[0], "type") : undefined)
}

/**
 * What an AI SDK model's failure means to the engine. An HTTP answer (APICallError with a
 * status) is a refusal, retryable as the provider package says, after its Retry-After; to a
 * start, a 502 or 504 came from a gateway that may have passed the request on, so its outcome is
 * unknown. No answer (APICallError without a status: the fetch failed) is ProviderUnreachable,
 * `notSent` when the connection provably never opened. The AI SDK's argument errors are raised
 * before anything is sent: final refusals. Anything else (an answer the package could not read)
 * may have followed a start: unknown.
 */
export const providerErrorOf = (providerId: string, error: unknown, options: { readonly isStart: boolean; readonly nowMs: number }): ProviderError => {
  const message = `${providerId}: ${messageOf(error)}`
  if (APICallError.isInstance(error)) {
    const status = error.statusCode
    if (status === undefined) return new ProviderUnreachable({ message, notSent: neverSent(error.cause ?? error) })
    if (options.isStart && (status === 502 || status === 504)) return new ProviderUnreachable({ message, notSent: false })
    const after = retryAfterMs(error.responseHeaders, options.nowMs)
    const providerCode = header(error.responseHeaders, "x-fal-error-type") ?? providerCodeIn(error.responseBody)
    return new ProviderRejected({
      message,
      retryable: error.isRetryable,
      httpStatus: status,
      ...(after === undefined ? {} : { retryAfterMs: after }),
      ...(providerCode === undefined ? {} : { providerCode })
    })
  }
  if (REFUSED_BEFORE_SENDING.has(nameOf(error) ?? "")) return new ProviderRejected({ message, retryable: false })
  return new ProviderUnreachable({ message, notSent: false })
}
