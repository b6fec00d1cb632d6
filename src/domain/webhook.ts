import { Schema } from "effect"
import { randomToken } from "./ids.js"
import type { Job } from "./job.js"

export const DeliveryStatus = Schema.Literal("pending", "sent", "failed")
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

/** Spec 6.2: output as an object (url, type, metadata) on success, error on failure. */
export const webhookPayload = (job: Job): string => {
  const first = job.outputs?.[0]
  return JSON.stringify({
    jobId: job.id,
    requestId: job.requestId,
    status: job.status,
    ...(job.status === "completed" && first !== undefined
      ? {
        output: {
          url: first.url,
          type: first.type,
          ...(first.contentType === undefined ? {} : { contentType: first.contentType }),
          ...(first.thumbnail === undefined ? {} : { thumbnail: first.thumbnail }),
          metadata: first.metadata ?? {}
        }
      }
      : {}),
    ...(job.error === null ? {} : { error: job.error }),
    completedAt: new Date(job.completedAt ?? job.createdAt).toISOString()
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
