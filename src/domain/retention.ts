import type { JobId } from "./ids.js"
import type { JobStatus } from "./job.js"
import type { DeliveryStatus } from "./webhook.js"

/** The jobs retention may remove: those that ended. */
export const retainedStatuses: ReadonlyArray<JobStatus> = ["completed", "failed", "cancelled"]

/** A delivery in these statuses is still to be sent: its job stays until it is sent or fails. */
export const unsentDeliveries: ReadonlyArray<DeliveryStatus> = ["pending"]

/**
 * Every file stored for a job has a key starting with this: the worker names outputs
 * `${jobId}-...`, whatever the attempt. Job ids have a fixed length, so no job's prefix is
 * another job's.
 */
export const jobFilePrefix = (jobId: JobId): string => `${jobId}-`

export interface RetentionPolicy {
  /** How long terminal jobs are kept after they ended; null keeps them. */
  readonly jobRetentionMs: number | null
  /** How long an Idempotency-Key is remembered. */
  readonly idempotencyWindowMs: number
}

export interface RetentionCutoffs {
  /** Terminal jobs that ended at or before this may go; null when jobs are kept. */
  readonly jobsEndedBy: number | null
  /** Idempotency records created before this no longer count (claimIdempotency ignores them) and go. */
  readonly idempotencyCreatedBefore: number
}

/**
 * What a sweep at `now` may remove: jobs that ended more than the retention ago, idempotency
 * records older than their window. A job is kept at least as long as an Idempotency-Key can
 * name it (a key counts through the last millisecond of its window, and a job ends after its
 * submit), so a retried submit always finds its job instead of an error or a second charge.
 */
export const retentionCutoffs = (policy: RetentionPolicy, now: number): RetentionCutoffs => ({
  jobsEndedBy: policy.jobRetentionMs === null ? null : now - Math.max(policy.jobRetentionMs, policy.idempotencyWindowMs) - 1,
  idempotencyCreatedBefore: now - policy.idempotencyWindowMs
})
