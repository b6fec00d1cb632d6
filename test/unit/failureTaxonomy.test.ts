import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { classifyFailure, type FailureClass, type FailureFact, failureTypes } from "../../src/domain/failureTaxonomy.js"
import { StoredJobError } from "../../src/domain/storedJobError.js"

const refused = (httpStatus: number | undefined, extra: Partial<Extract<FailureFact, { _tag: "Refused" }>> = {}): FailureFact => ({
  _tag: "Refused",
  httpStatus,
  retryable: httpStatus === undefined ? false : httpStatus === 408 || httpStatus === 429 || httpStatus >= 500,
  ...extra
})
const failedWith = (providerCode?: string, contentBlocked?: boolean): FailureFact => ({ _tag: "GenerationFailed", providerCode, contentBlocked })

const cases: ReadonlyArray<readonly [string, FailureFact, FailureClass]> = [
  // HTTP statuses alone
  ["429", refused(429), { type: "rate_limited", retryable: true }],
  ["408", refused(408), { type: "provider_timeout", retryable: true }],
  ["504", refused(504), { type: "provider_timeout", retryable: true }],
  ["500", refused(500), { type: "provider_unavailable", retryable: true }],
  ["503", refused(503), { type: "provider_unavailable", retryable: true }],
  ["400", refused(400), { type: "input_rejected", retryable: false }],
  ["422", refused(422), { type: "input_rejected", retryable: false }],
  ["401 (credentials)", refused(401), { type: "internal", retryable: false }],
  ["403 (permission)", refused(403, { providerCode: "PERMISSION_DENIED" }), { type: "internal", retryable: false }],
  ["402 (credits)", refused(402), { type: "provider_unavailable", retryable: false }],
  ["no status, final (AI SDK argument error)", refused(undefined), { type: "input_rejected", retryable: false }],
  ["no status, retryable", { _tag: "Refused", retryable: true }, { type: "provider_unavailable", retryable: true }],
  // providers' codes
  ["OpenAI content_policy_violation (400)", refused(400, { providerCode: "content_policy_violation" }), { type: "content_blocked", retryable: false }],
  ["OpenAI moderation_blocked", refused(400, { providerCode: "moderation_blocked" }), { type: "content_blocked", retryable: false }],
  ["OpenAI invalid_api_key (401)", refused(401, { providerCode: "invalid_api_key" }), { type: "internal", retryable: false }],
  ["OpenAI insufficient_quota (429)", refused(429, { providerCode: "insufficient_quota" }), { type: "provider_unavailable", retryable: false }],
  ["OpenAI rate_limit_exceeded (429)", refused(429, { providerCode: "rate_limit_exceeded" }), { type: "rate_limited", retryable: true }],
  ["fal content_policy_violation (422)", refused(422, { providerCode: "content_policy_violation" }), { type: "content_blocked", retryable: false }],
  ["fal generation_timeout (504)", refused(504, { providerCode: "generation_timeout" }), { type: "provider_timeout", retryable: true }],
  ["fal image_too_small (422)", refused(422, { providerCode: "image_too_small" }), { type: "input_rejected", retryable: false }],
  ["fal runner_scheduling_failure (503)", refused(503, { providerCode: "runner_scheduling_failure" }), { type: "provider_unavailable", retryable: true }],
  ["Google RESOURCE_EXHAUSTED (429)", refused(429, { providerCode: "RESOURCE_EXHAUSTED" }), { type: "rate_limited", retryable: true }],
  ["Google INVALID_ARGUMENT (400)", refused(400, { providerCode: "INVALID_ARGUMENT" }), { type: "input_rejected", retryable: false }],
  ["OpenRouter moderation (403, flagged)", refused(403, { contentBlocked: true }), { type: "content_blocked", retryable: false }],
  // generations that failed at the provider
  ["Runway SAFETY.INPUT.TEXT", failedWith("SAFETY.INPUT.TEXT"), { type: "content_blocked", retryable: false }],
  ["Runway SAFETY.OUTPUT.VIDEO", failedWith("SAFETY.OUTPUT.VIDEO"), { type: "content_blocked", retryable: false }],
  ["Runway INPUT_PREPROCESSING.SAFETY.TEXT", failedWith("INPUT_PREPROCESSING.SAFETY.TEXT"), { type: "content_blocked", retryable: false }],
  ["Runway INTERNAL.BAD_OUTPUT.CODE01", failedWith("INTERNAL.BAD_OUTPUT.CODE01"), { type: "provider_unavailable", retryable: true }],
  ["Runway ASSET.INVALID", failedWith("ASSET.INVALID"), { type: "input_rejected", retryable: false }],
  ["Veo filtered by safety (flag)", failedWith(undefined, true), { type: "content_blocked", retryable: false }],
  ["Veo operation DEADLINE_EXCEEDED", failedWith("DEADLINE_EXCEEDED"), { type: "provider_timeout", retryable: true }],
  ["a failure without a reason", failedWith(), { type: "provider_unavailable", retryable: true }],
  ["an unknown code", failedWith("E_SOMETHING"), { type: "provider_unavailable", retryable: true }],
  // no answer
  ["a request that timed out", { _tag: "NoAnswer", timedOut: true }, { type: "provider_timeout", retryable: true }],
  ["a refused or reset connection", { _tag: "NoAnswer", timedOut: false }, { type: "provider_unavailable", retryable: true }],
  // the engine's own
  ["an outage past the wait", { _tag: "Outage" }, { type: "provider_unavailable", retryable: true }],
  ["the version's deadline", { _tag: "Deadline" }, { type: "provider_timeout", retryable: true }],
  ["an output refused by the checks", { _tag: "OutputRejected" }, { type: "output_invalid", retryable: false }],
  ["a lost run's unconfirmed start", { _tag: "Engine", reason: "startUnconfirmed" }, { type: "internal", retryable: true }],
  ["workers stopped responding", { _tag: "Engine", reason: "abandoned" }, { type: "internal", retryable: true }],
  ["a version gone", { _tag: "Engine", reason: "notRunnable" }, { type: "internal", retryable: false }],
  ["an unreadable row", { _tag: "Engine", reason: "unreadable" }, { type: "internal", retryable: false }]
]

describe("the failure taxonomy", () => {
  it.each(cases)("%s", (_name, fact, expected) => {
    expect(classifyFailure(fact)).toEqual(expected)
  })

  it("a content flag wins over any status and code", () => {
    expect(classifyFailure(refused(429, { providerCode: "rate_limit_exceeded", contentBlocked: true }))).toEqual({ type: "content_blocked", retryable: false })
    expect(classifyFailure(failedWith("INTERNAL", true))).toEqual({ type: "content_blocked", retryable: false })
  })

  it("every type is reached by some fact", () => {
    expect(new Set(cases.map(([, fact]) => classifyFailure(fact).type))).toEqual(new Set(failureTypes))
  })

  it("an error stored before the taxonomy reads as internal, not retryable; a new one reads as written", () => {
    const decode = Schema.decodeUnknownSync(StoredJobError)
    expect(decode({ code: "GENERATION_FAILED", message: "old" })).toEqual({ code: "GENERATION_FAILED", message: "old", type: "internal", retryable: false })
    const typed = { code: "GENERATION_FAILED", message: "new", type: "rate_limited", retryable: true }
    expect(decode(typed)).toEqual(typed)
    expect(Schema.encodeSync(StoredJobError)(decode(typed))).toEqual(typed)
  })
})
