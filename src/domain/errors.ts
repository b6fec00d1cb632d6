import { Schema } from "effect"

/** Every error code the engine answers with; the HTTP status of each lives in http/errorEnvelope.ts (`statusOf`). */
export const ErrorCode = Schema.Literal(
  "VALIDATION_ERROR",
  "INVALID_INPUT",
  "INVALID_CONTENT_TYPE",
  "UNAUTHORIZED",
  "INVALID_API_KEY",
  "API_KEY_INACTIVE",
  "API_KEY_EXPIRED",
  "INSUFFICIENT_BALANCE",
  "BUDGET_EXCEEDED",
  "IP_NOT_WHITELISTED",
  "OPERATION_NOT_ALLOWED",
  "MODEL_ACCESS_DENIED",
  "UNAUTHORIZED_ACCESS",
  "MODEL_NOT_FOUND",
  "JOB_NOT_FOUND",
  "NOT_FOUND",
  "JOB_CANNOT_BE_CANCELLED",
  "IDEMPOTENCY_KEY_REUSED",
  "DELIVERY_NOT_RETRYABLE",
  "PRECONDITION_FAILED",
  "UPLOAD_URL_INVALID",
  "UPLOAD_URL_EXPIRED",
  "UPLOAD_ALREADY_RECEIVED",
  "FILE_TOO_LARGE",
  "PAYLOAD_TOO_LARGE",
  "LENGTH_REQUIRED",
  "REQUEST_TIMEOUT",
  "CONCURRENT_JOBS_EXCEEDED",
  "RATE_LIMIT_EXCEEDED",
  "PUBSUB_PUBLISH_FAILED",
  "SERVICE_UNAVAILABLE",
  "INTERNAL_ERROR"
)
export type ErrorCode = typeof ErrorCode.Type

/**
 * The one failure type of the engine's public operations. A single class keyed by `code` keeps
 * the mapping to the spec's envelope total; `retryAfterSeconds` travels with rate and
 * concurrency refusals so the HTTP layer can send Retry-After.
 */
export class EngineError extends Schema.TaggedError<EngineError>()("EngineError", {
  code: ErrorCode,
  message: Schema.String,
  details: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  retryAfterSeconds: Schema.optional(Schema.Number)
}) {}

export const engineError = (
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
  retryAfterSeconds?: number
): EngineError => new EngineError({ code, message, details, retryAfterSeconds })

/**
 * A client may retry a request the store could not serve after this long: long enough for a
 * failover or a pool reconnect, short enough that an interactive client still waits.
 */
export const STORE_RETRY_AFTER_SECONDS = 5

/** A storage or infrastructure failure: shown to clients only as a 503 to retry, never its cause. */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/** A queue broker (Redis, NATS) that could not be reached or refused a command. */
export class QueueError extends Schema.TaggedError<QueueError>()("QueueError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Unknown)
}) {}

/** A job status change that the state machine refuses. */
export class TransitionError extends Schema.TaggedError<TransitionError>()("TransitionError", {
  from: Schema.String,
  event: Schema.String
}) {}

/**
 * A stored row that does not decode to its record: the store answered, but with data this
 * engine cannot read (a hand edit, a bad migration). It travels as the `cause` of a StoreError,
 * so the stores' signatures stay as they are, and is answered 500 rather than a 503 to retry,
 * as a retry reads the same row.
 */
export class CorruptRow extends Schema.TaggedError<CorruptRow>()("CorruptRow", {
  /** What the store was doing: "read job", "list jobs". */
  operation: Schema.String,
  /** The id of the row that failed, when the row has one. */
  rowId: Schema.optional(Schema.String),
  /** The decoder's account of what is wrong. */
  issue: Schema.String
}) {}

/**
 * What was too busy to serve a request in time: the reason a shed request's 503 gives in
 * `details.reason`. The store's pooled connections are the one resource requests queue for today.
 */
export type ShedReason = "store_busy"

/**
 * A request's wait for the store that would pass its bound, refused before anything was sent
 * to the store: nothing was written, so a retry is safe. Travels as the cause of a driver
 * error inside a StoreError (as CorruptRow does), so the stores' signatures stay as they are.
 */
export class StoreBusy extends Schema.TaggedError<StoreBusy>()("StoreBusy", {
  reason: Schema.Literal("store_busy"),
  /** When the queue in front of the request is expected to have drained, in whole seconds (at least 1). */
  retryAfterSeconds: Schema.Number
}) {}

/** The StoreBusy a store failure was caused by, looked for down its chain of causes (a driver error, then ours). */
export const storeBusyOf = (error: StoreError): StoreBusy | undefined => {
  let cause: unknown = error.cause
  for (let depth = 0; depth < 4 && typeof cause === "object" && cause !== null; depth++) {
    if (cause instanceof StoreBusy) return cause
    cause = (cause as { readonly cause?: unknown }).cause
  }
  return undefined
}

/** The two codes a request the store could not serve is answered with: submit's (the spec's) and every other endpoint's. */
export type RetryLaterCode = "PUBSUB_PUBLISH_FAILED" | "SERVICE_UNAVAILABLE"

const unavailableMessage: Record<RetryLaterCode, string> = {
  PUBSUB_PUBLISH_FAILED: "The job could not be queued; nothing was charged, retry",
  SERVICE_UNAVAILABLE: "The service cannot be reached for a moment; retry"
}

const busyMessage: Record<RetryLaterCode, string> = {
  PUBSUB_PUBLISH_FAILED: "Too many requests are waiting for the store: the job was not queued and nothing was charged; retry after Retry-After",
  SERVICE_UNAVAILABLE: "Too many requests are waiting for the store; retry after Retry-After"
}

/**
 * The one answer to a request the store could not serve (docs/decisions.md, "Load shedding"):
 * a 503 with Retry-After whose `details.reason` says why: `store_busy` when the request was shed
 * (Retry-After: when the queue it found should have drained), `store_unavailable` when the
 * store failed (Retry-After: STORE_RETRY_AFTER_SECONDS, for a failover).
 */
export const retryLater = (code: RetryLaterCode, error: StoreError, details: Record<string, unknown> = {}): EngineError => {
  const busy = storeBusyOf(error)
  return busy === undefined
    ? engineError(code, unavailableMessage[code], { ...details, reason: "store_unavailable" }, STORE_RETRY_AFTER_SECONDS)
    : engineError(code, busyMessage[code], { ...details, reason: busy.reason }, busy.retryAfterSeconds)
}

/** Whether an answer is a shed request's (counted by genjobs_requests_shed_total), and why. */
export const shedReasonOf = (error: EngineError): ShedReason | undefined =>
  error.details?.["reason"] === "store_busy" ? "store_busy" : undefined
