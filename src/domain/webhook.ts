import { Schema } from "effect"
import { randomToken } from "./ids.js"
import { IsoFromMillis } from "./isoTime.js"
import { Job, JobError, OutputItem } from "./job.js"
import { Refusal } from "./refusal.js"

export const DeliveryStatus = Schema.Literals(["pending", "sent", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

export const DeliveryAttempt = Schema.Struct({
  attempt: Schema.Int,
  at: Schema.Int,
  statusCode: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  durationMs: Schema.Int,
  responseBody: Schema.NullOr(Schema.String)
})
export type DeliveryAttempt = typeof DeliveryAttempt.Type

/** One webhook of one job: written with the job's terminal state, sent by the dispatcher. */
export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  jobId: Schema.String,
  accountId: Schema.String,
  url: Schema.String,
  /** The exact body sent on every attempt, so retries carry identical bytes. */
  payload: Schema.String,
  status: DeliveryStatus,
  attempts: Schema.Array(DeliveryAttempt),
  nextAttemptAt: Schema.NullOr(Schema.Int),
  leaseOwner: Schema.NullOr(Schema.String),
  leaseExpiresAt: Schema.NullOr(Schema.Int),
  createdAt: Schema.Int
})
export type WebhookDelivery = typeof WebhookDelivery.Type

/**
 * Spec 6.2: a webhook's body. On success the first output as an object (metadata always
 * present), on failure the error; times as ISO.
 */
export const WebhookPayload = Schema.Struct({
  jobId: Job.fields.id,
  requestId: Job.fields.requestId,
  status: Job.fields.status,
  output: Schema.optional(Schema.Struct({
    url: OutputItem.fields.url,
    type: OutputItem.fields.type,
    contentType: OutputItem.fields.contentType,
    thumbnail: OutputItem.fields.thumbnail,
    metadata: Schema.required(OutputItem.fields.metadata)
  })),
  error: Schema.optional(JobError),
  completedAt: IsoFromMillis
})
export type WebhookPayload = typeof WebhookPayload.Type

const encodePayload = Schema.encodeSync(Schema.fromJsonString(WebhookPayload))

/** A terminal job's webhook body: the exact bytes every attempt sends. */
export const webhookPayload = (job: Job): string => {
  const first = job.outputs?.[0]
  // Absent (undefined) keys are left out of the JSON.
  return encodePayload({
    jobId: job.id,
    requestId: job.requestId,
    status: job.status,
    output: job.status === "completed" && first !== undefined
      ? {
        url: first.url,
        type: first.type,
        contentType: first.contentType,
        thumbnail: first.thumbnail,
        metadata: first.metadata ?? {}
      }
      : undefined,
    error: job.error ?? undefined,
    completedAt: job.completedAt ?? job.createdAt
  })
}

/** The outbox row a terminal job with a webhookUrl gets; undefined when none is due. */
export const deliveryFor = (job: Job, now: number): WebhookDelivery | undefined =>
  job.webhookUrl === null || (job.status !== "completed" && job.status !== "failed")
    ? undefined
    : {
      id: `whd_${randomToken(12)}`,
      jobId: job.id,
      accountId: job.accountId,
      url: job.webhookUrl,
      payload: webhookPayload(job),
      status: "pending",
      attempts: [],
      nextAttemptAt: now,
      leaseOwner: null,
      leaseExpiresAt: null,
      createdAt: now
    }

/** Only failed deliveries can be retried. */
export class DeliveryNotRetryable extends Refusal<DeliveryNotRetryable>()("DeliveryNotRetryable", {
  code: "DELIVERY_NOT_RETRYABLE",
  status: 409
}) {}
