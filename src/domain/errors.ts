import { Schema } from "effect"
import { Refusal, RetryLaterRefusal } from "./refusal.js"
import type { EngineRefusal } from "./refusals.js"

/**
 * The engine's refusals are one class each, declared where their rule lives (access.ts,
 * admission.ts, budget.ts, catalog.ts, job.ts, limits.ts, rateLimit.ts, upload.ts, webhook.ts)
 * and gathered in refusals.ts; these are the ones no single rule owns.
 */

/** The request (its body, query, path or a header) is malformed or out of range. */
export class ValidationError extends Refusal<ValidationError>()("ValidationError", { code: "VALIDATION_ERROR", status: 400 }) {}

/** Nothing by this id or path (an account, a key, an upload, a delivery, an endpoint). */
export class NotFound extends Refusal<NotFound>()("NotFound", { code: "NOT_FOUND", status: 404 }) {}

/** A failure the client cannot act on (a defect, a row the store cannot read): logged, never described. */
export class InternalError extends Refusal<InternalError>()("InternalError", { code: "INTERNAL_ERROR", status: 500 }) {}

/** The store (or a watcher slot) cannot serve the request for a moment: retry after Retry-After. */
export class ServiceUnavailable extends RetryLaterRefusal<ServiceUnavailable>()("ServiceUnavailable", {
  code: "SERVICE_UNAVAILABLE",
  status: 503
}) {}

/** Submit's answer when the job could not be queued (the spec's code): nothing was charged, retry. */
export class PubsubPublishFailed extends RetryLaterRefusal<PubsubPublishFailed>()("PubsubPublishFailed", {
  code: "PUBSUB_PUBLISH_FAILED",
  status: 503
}) {}

/**
 * Deprecated name of the union of every refusal (`EngineRefusal`, refusals.ts), kept so type
 * annotations written against 0.x still compile; there is no `EngineError` class or tag any more:
 * match a refusal by its own tag (`Effect.catchTag("JobNotFound", ...)`).
 */
export type EngineError = EngineRefusal

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

/** The two refusals a request the store could not serve is answered with: submit's (the spec's) and every other endpoint's. */
export type RetryLater = typeof PubsubPublishFailed | typeof ServiceUnavailable

const unavailableMessage = (refusal: RetryLater) =>
  refusal === PubsubPublishFailed
    ? "The job could not be queued; nothing was charged, retry"
    : "The service cannot be reached for a moment; retry"

const busyMessage = (refusal: RetryLater) =>
  refusal === PubsubPublishFailed
    ? "Too many requests are waiting for the store: the job was not queued and nothing was charged; retry after Retry-After"
    : "Too many requests are waiting for the store; retry after Retry-After"

/**
 * The one answer to a request the store could not serve (docs/decisions.md, "Load shedding"):
 * a 503 with Retry-After whose `details.reason` says why: `store_busy` when the request was shed
 * (Retry-After: when the queue it found should have drained), `store_unavailable` when the
 * store failed (Retry-After: STORE_RETRY_AFTER_SECONDS, for a failover).
 */
export const retryLater = <R extends RetryLater>(refusal: R, error: StoreError, details: Record<string, unknown> = {}): InstanceType<R> => {
  const busy = storeBusyOf(error)
  const answer = busy === undefined
    ? {
      message: unavailableMessage(refusal),
      details: { ...details, reason: "store_unavailable" },
      retryAfterSeconds: STORE_RETRY_AFTER_SECONDS
    }
    : { message: busyMessage(refusal), details: { ...details, reason: busy.reason }, retryAfterSeconds: busy.retryAfterSeconds }
  return new refusal(answer) as InstanceType<R>
}

/** Whether an answer is a shed request's (counted by genjobs_requests_shed_total), and why. */
export const shedReasonOf = (error: { readonly details?: Record<string, unknown> | undefined }): ShedReason | undefined =>
  error.details?.["reason"] === "store_busy" ? "store_busy" : undefined
