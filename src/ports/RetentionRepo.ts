import { Context, type Effect } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import type { JobStatus } from "../domain/job.js"
import type { DeliveryStatus } from "../domain/webhook.js"

/** Which jobs a removal may take; the sweeper (services/RetentionSweeper.ts) decides, the store only filters. */
export interface RetentionFilter {
  /** Only jobs in one of these statuses. */
  readonly statuses: ReadonlyArray<JobStatus>
  /** A job with a webhook delivery in one of these statuses is kept, and so is that delivery. */
  readonly unsentDeliveries: ReadonlyArray<DeliveryStatus>
}

/**
 * What retention removes from a store: ended jobs with their webhook deliveries, and
 * idempotency records past their window. The ledger is never touched: its lines keep the ids of
 * removed jobs. A store reads and writes here; it decides nothing.
 */
export class RetentionRepo extends Context.Service<RetentionRepo, {
  /**
   * Gives the lease `name` to `owner` until `expiresAt` when it is free, expired by `now` or
   * already `owner`'s; false when another owner holds it. The same leases as the job store's
   * (JobLeaseDriver.takeLease), so every process sharing the store sees them.
   */
  readonly takeLease: (name: string, owner: string, now: number, expiresAt: number) => Effect.Effect<boolean, StoreError>
  /** Up to `limit` ids of jobs the filter admits that ended (completedAt) at or before `endedBy`, earliest end first. */
  readonly endedJobs: (
    query: RetentionFilter & { readonly endedBy: number; readonly limit: number }
  ) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * In one transaction: deletes the webhook deliveries of `jobIds` but the unsent ones, then
   * those of the jobs that the filter admits and that have no delivery left, with their
   * provider log lines (JobLogRepo). Answers the numbers deleted.
   */
  readonly removeJobs: (
    removal: RetentionFilter & { readonly jobIds: ReadonlyArray<JobId> }
  ) => Effect.Effect<{ readonly jobs: number; readonly deliveries: number }, StoreError>
  /** Deletes up to `limit` idempotency records created before `createdBefore`; answers how many. */
  readonly purgeIdempotency: (createdBefore: number, limit: number) => Effect.Effect<number, StoreError>
}>()("genjobs/RetentionRepo") {}
