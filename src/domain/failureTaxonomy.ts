import { Schema } from "effect"

/**
 * Why a job failed, in a small set that is the same for every provider (issue 38). Decided once,
 * here, by `classifyFailure` from the facts an adapter (or the engine) reports; adapters never
 * name a type themselves.
 */
export const FailureType = Schema.Literals([
  "provider_unavailable",
  "provider_timeout",
  "input_rejected",
  "content_blocked",
  "output_invalid",
  "rate_limited",
  "internal"
]).annotate({
  description: "Why the job failed: provider_unavailable (the provider failed or could not take the job), " +
    "provider_timeout (no answer or no result in time), input_rejected (the provider refused the input), " +
    "content_blocked (the prompt or the result broke a content policy), output_invalid (the result failed the engine's checks), " +
    "rate_limited (the provider turned the job away for rate or quota), internal (the engine's own failure)"
})
export type FailureType = typeof FailureType.Type

export const failureTypes: ReadonlyArray<FailureType> = FailureType.literals

/** A failure's type and whether the same submit would likely succeed later. */
export interface FailureClass {
  readonly type: FailureType
  readonly retryable: boolean
}

/** What a provider reports about an error beside its HTTP status: its own code or category, and a content-policy flag. */
export interface ProviderFacts {
  /** The provider's error code, type or category as it sent it (`content_policy_violation`, `SAFETY.INPUT.TEXT`, `RESOURCE_EXHAUSTED`). */
  readonly providerCode?: string | undefined
  /** The provider said the prompt or the result broke its content policy (a flag, a filtered count). */
  readonly contentBlocked?: boolean | undefined
  /** The provider's result failed the adapter's checks: it ended "succeeded" without an output it can fetch. */
  readonly outputInvalid?: boolean | undefined
  /** The HTTP status of the error answer that carried a generation's failure, when one did. */
  readonly httpStatus?: number | undefined
}

/**
 * The facts a failure is classified from: what happened, never what it means.
 * - Refused: the provider answered a call with an error (its status, code, and whether the adapter's rules retry it).
 * - NoAnswer: no usable answer in the end (`timedOut` when it was the request's time that ran out).
 * - GenerationFailed: the provider ran the generation and reports it failed.
 * - Outage: every route stayed unavailable until the job's outage wait ran out.
 * - Deadline: the generation did not end within the version's `provider.timeoutSeconds`.
 * - OutputRejected: the provider's result failed the engine's output checks (type, size).
 * - Engine: the engine's own failure (`startUnconfirmed`: a start with no answer that the provider
 *   could not point to; `abandoned`: workers stopped responding; `notRunnable`: the version or
 *   its provider is gone; `unreadable`: a row it cannot decode or a defect).
 */
export type FailureFact =
  | ({ readonly _tag: "Refused"; readonly retryable: boolean } & ProviderFacts)
  | { readonly _tag: "NoAnswer"; readonly timedOut: boolean }
  | ({ readonly _tag: "GenerationFailed" } & ProviderFacts)
  | { readonly _tag: "Outage" }
  | { readonly _tag: "Deadline" }
  | { readonly _tag: "OutputRejected" }
  | { readonly _tag: "Engine"; readonly reason: "startUnconfirmed" | "abandoned" | "notRunnable" | "unreadable" }

/**
 * Provider codes by what they mean, matched case-insensitively against the code's words (split
 * on `.`, `_`, `-`, `/` and spaces). Taken from each provider's documented error shapes; see
 * docs/providers.md for the table per provider.
 */
const CODE_WORDS: ReadonlyArray<readonly [RegExp, FailureType]> = [
  // OpenAI content_policy_violation / moderation_blocked, Runway SAFETY.*, fal content_policy_violation,
  // Gemini's SAFETY, OpenRouter moderation.
  [/(^|[._\-/ ])(content[._\-/ ]?policy|moderation|moderated|safety|nsfw|blocked|flagged)([._\-/ ]|$)/i, "content_blocked"],
  [/(^|[._\-/ ])(rate[._\-/ ]?limit(ed)?|too[._\-/ ]?many[._\-/ ]?requests|resource[._\-/ ]?exhausted|throttled|quota)([._\-/ ]|$)/i, "rate_limited"],
  [/(^|[._\-/ ])(timeout|timed[._\-/ ]?out|deadline[._\-/ ]?exceeded|generation[._\-/ ]?timeout)([._\-/ ]|$)/i, "provider_timeout"],
  // Credentials the engine was configured with (OpenAI invalid_api_key, Google PERMISSION_DENIED / UNAUTHENTICATED).
  [/(^|[._\-/ ])(invalid[._\-/ ]?api[._\-/ ]?key|permission[._\-/ ]?denied|unauthenticated|unauthorized)([._\-/ ]|$)/i, "internal"],
  [/(^|[._\-/ ])(invalid|validation|bad[._\-/ ]?request|unprocessable|out[._\-/ ]?of[._\-/ ]?range|failed[._\-/ ]?precondition|file[._\-/ ]?download[._\-/ ]?error|image[._\-/ ]?(too[._\-/ ]?(small|large)|load[._\-/ ]?error))([._\-/ ]|$)/i, "input_rejected"],
  [/(^|[._\-/ ])(unavailable|overloaded|server[._\-/ ]?error|internal|internal[._\-/ ]?error|service[._\-/ ]?unavailable|aborted)([._\-/ ]|$)/i, "provider_unavailable"]
]

/** Payment and credential refusals: the operator's to fix, so no retry by the client helps soon. */
const BILLING = /(^|[._\-/ ])(insufficient[._\-/ ]?(quota|credits|balance|funds)|billing|payment)([._\-/ ]|$)/i

const byCode = (code: string | undefined): FailureType | undefined => {
  if (code === undefined || code === "") return undefined
  return CODE_WORDS.find(([pattern]) => pattern.test(code))?.[1]
}

/** Types a later identical submit would likely get past: the provider's state, not the request. */
const retryableTypes: ReadonlySet<FailureType> = new Set(["provider_unavailable", "provider_timeout", "rate_limited"])

const typed = (type: FailureType): FailureClass => ({ type, retryable: retryableTypes.has(type) })

const byStatus = (status: number, adapterRetries: boolean): FailureClass => {
  if (status === 402) return { type: "provider_unavailable", retryable: false }
  if (status === 429) return typed("rate_limited")
  if (status === 408 || status === 504) return typed("provider_timeout")
  if (status >= 500) return typed("provider_unavailable")
  if (status >= 400) return typed("input_rejected")
  return adapterRetries ? typed("provider_unavailable") : typed("input_rejected")
}

/**
 * The one mapping from what happened to the failure's type and retryability, the same for every
 * provider. A content-policy flag or code wins over everything; then billing (never retryable)
 * and refused credentials (the engine's); then the provider's code; then the HTTP status; then
 * the adapter's verdict.
 */
export const classifyFailure = (fact: FailureFact): FailureClass => {
  switch (fact._tag) {
    case "Refused":
    case "GenerationFailed": {
      if (fact.contentBlocked === true) return typed("content_blocked")
      if (fact.outputInvalid === true) return typed("output_invalid")
      if (fact.providerCode !== undefined && BILLING.test(fact.providerCode)) return { type: "provider_unavailable", retryable: false }
      // Credentials or permissions the engine was configured with (OpenAI's invalid_api_key among them): never the input's fault.
      if (fact.httpStatus === 401 || fact.httpStatus === 403) return { type: "internal", retryable: false }
      const coded = byCode(fact.providerCode)
      if (coded !== undefined) return typed(coded)
      if (fact.httpStatus !== undefined) return byStatus(fact.httpStatus, fact._tag === "Refused" && fact.retryable)
      // A generation that failed at the provider without saying why: most often the provider's trouble.
      if (fact._tag === "GenerationFailed") return typed("provider_unavailable")
      return fact.retryable ? typed("provider_unavailable") : typed("input_rejected")
    }
    case "NoAnswer":
      return typed(fact.timedOut ? "provider_timeout" : "provider_unavailable")
    case "Outage":
      return typed("provider_unavailable")
    case "Deadline":
      return typed("provider_timeout")
    case "OutputRejected":
      return typed("output_invalid")
    case "Engine":
      // A start nobody could confirm, or a run whose workers died, had nothing wrong with its request.
      return { type: "internal", retryable: fact.reason === "startUnconfirmed" || fact.reason === "abandoned" }
  }
}

/** The engine's codes for a failed job (the spec's GENERATION_FAILED and INTERNAL_ERROR, and PROVIDER_UNAVAILABLE). */
export type FailureCode = "GENERATION_FAILED" | "INTERNAL_ERROR" | "PROVIDER_UNAVAILABLE"

/** A failed job's error: the spec's code and message, and the type and retryability classifyFailure gives the fact. */
export const failureOf = (code: FailureCode, message: string, fact: FailureFact) => ({ code, message, ...classifyFailure(fact) })

/**
 * The class of an error stored before the taxonomy existed: nothing says what happened, so it
 * reads as the engine's own failure, and no retry is promised.
 */
export const UNCLASSIFIED: FailureClass = { type: "internal", retryable: false }
