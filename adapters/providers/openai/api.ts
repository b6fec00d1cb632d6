import { Option, Schema } from "effect"
import { parseRetryAfterMs } from "../../../src/domain/retryAfter.js"
import type { ProviderApi } from "../providerHttp.js"

/** OpenAI's error body: `{ error: { message, type, param, code } }`. */
const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.optional(Schema.NullOr(Schema.String)),
    code: Schema.optional(Schema.NullOr(Schema.String))
  })
})
const decodeErrorBody = Schema.decodeUnknownOption(ErrorBody)

/** A quota used up (billing) answers 429 too, but no wait makes it pass. */
const isQuotaExhausted = (body: unknown): boolean =>
  Option.match(decodeErrorBody(body), {
    onNone: () => false,
    onSome: ({ error }) => error.code === "insufficient_quota" || error.type === "insufficient_quota"
  })

/** OpenAI's reset durations, as in `x-ratelimit-reset-requests: 6m0s` or `20ms`. */
export const parseOpenAIDuration = (value: string | undefined): number | undefined => {
  const text = value?.trim()
  if (text === undefined || !/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(text)) return undefined
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }
  let total = 0
  for (const [, amount, , name] of text.matchAll(/(\d+(\.\d+)?)(ms|h|m|s)/g)) total += Number(amount) * unit[name!]!
  return Math.ceil(total)
}

/**
 * When OpenAI says to ask again: `retry-after-ms`, then `retry-after`, then the reset time of the
 * exhausted limit (`x-ratelimit-reset-requests` / `-tokens` where the matching remaining count is 0;
 * the later of both when neither says 0).
 */
export const openAIRetryAfterMs = (headers: Readonly<Record<string, string>>, nowMs: number): number | undefined => {
  const ms = Number(headers["retry-after-ms"])
  if (headers["retry-after-ms"] !== undefined && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms)
  const header = parseRetryAfterMs(headers["retry-after"], nowMs)
  if (header !== undefined) return header
  const limits = ["requests", "tokens"].flatMap((limit) => {
    const reset = parseOpenAIDuration(headers[`x-ratelimit-reset-${limit}`])
    return reset === undefined ? [] : [{ reset, exhausted: headers[`x-ratelimit-remaining-${limit}`]?.trim() === "0" }]
  })
  const exhausted = limits.filter((limit) => limit.exhausted)
  const resets = (exhausted.length > 0 ? exhausted : limits).map((limit) => limit.reset)
  return resets.length === 0 ? undefined : Math.max(...resets)
}

/**
 * OpenAI's answers as the shared HTTP exchange reads them, with every key to redact. Retryable
 * as its SDKs retry: 408, 409, 429, 5xx.
 */
export const openAIApi = (...apiKeys: ReadonlyArray<string>): ProviderApi => ({
  name: "OpenAI",
  secrets: apiKeys,
  errorMessage: (body) => Option.getOrUndefined(Option.map(decodeErrorBody(body), ({ error }) => error.message)),
  // `code` (content_policy_violation, moderation_blocked, rate_limit_exceeded, insufficient_quota, ...), else `type`.
  errorFacts: (body) =>
    Option.match(Option.flatMap(decodeErrorBody(body), ({ error }) => Option.fromNullishOr(error.code ?? error.type)), {
      onNone: () => ({}),
      onSome: (providerCode) => ({ providerCode })
    }),
  isRetryable: (status, body) =>
    status === 408 || status === 409 || status >= 500 || (status === 429 && !isQuotaExhausted(body)),
  retryAfterMs: openAIRetryAfterMs
})
