import type { Effect, Option } from "effect"
import type { Account } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId, JobId } from "../domain/ids.js"
import type { Job, JobStatus } from "../domain/job.js"
import type { WindowUsage } from "../domain/rateLimit.js"
import type { WebhookDelivery } from "../domain/webhook.js"
import type { ListQuery } from "./JobRepo.js"

export interface IdempotencyRecord {
  readonly requestHash: string
  readonly jobId: JobId
  readonly createdAt: number
}

/** A charge or refund of one job. */
export interface JobLedgerEntry {
  readonly accountId: AccountId
  readonly jobId: JobId
  readonly kind: "charge" | "refund"
  /** Signed: charges negative, refunds positive. */
  readonly amountMicroCents: number
  readonly now: number
}

/**
 * What a job store must do for `makeJobRepo` (services/jobRepoRules.ts), which owns every rule:
 * the state machine, refunds, webhooks, ownership, idempotency and admission. A driver only
 * reads and writes; it decides nothing. A store with row locks holds what `lock…`,
 * `findExhausted` and `nextRunnable` read until the enclosing `transaction` ends; the last two
 * skip rows another transaction holds, so parallel claims take different jobs.
 */
export interface JobStoreDriver {
  /** Runs `effect` as one atomic unit: all of its writes commit, or none do. Never nested. */
  readonly transaction: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | StoreError>
  /** Reads the account and holds it until the transaction ends, so its submits run one at a time. */
  readonly lockAccount: (id: AccountId) => Effect.Effect<Option.Option<Account>, StoreError>
  readonly findIdempotency: (accountId: AccountId, key: string) => Effect.Effect<Option.Option<IdempotencyRecord>, StoreError>
  /** Inserts or replaces the record of (accountId, key). */
  readonly saveIdempotency: (accountId: AccountId, key: string, record: IdempotencyRecord) => Effect.Effect<void, StoreError>
  readonly countJobs: (accountId: AccountId, statuses: ReadonlyArray<JobStatus>) => Effect.Effect<number, StoreError>
  /** The account's jobs on one model version created strictly after `since`. */
  readonly windowUsage: (
    accountId: AccountId,
    model: string,
    version: string,
    since: number
  ) => Effect.Effect<WindowUsage, StoreError>
  readonly insertJob: (job: Job) => Effect.Effect<void, StoreError>
  readonly getJob: (id: JobId) => Effect.Effect<Option.Option<Job>, StoreError>
  /** `getJob`, holding the row until the transaction ends. */
  readonly lockJob: (id: JobId) => Effect.Effect<Option.Option<Job>, StoreError>
  /**
   * Writes `next` only while the stored row still has the expected status and attempts; false
   * when it no longer does, and then nothing is written.
   */
  readonly updateJob: (
    next: Job,
    expected: { readonly status: JobStatus; readonly attempts: number }
  ) => Effect.Effect<boolean, StoreError>
  /**
   * Writes the ledger line and moves the balance by its amount. At most one line per (job, kind):
   * a second one writes and moves nothing and answers false.
   */
  readonly postLedger: (entry: JobLedgerEntry) => Effect.Effect<boolean, StoreError>
  readonly insertDelivery: (delivery: WebhookDelivery) => Effect.Effect<void, StoreError>
  /** Newest first over (createdAt, id), up to `limit + 1` jobs. */
  readonly listJobs: (query: ListQuery) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /** Processing jobs whose lease expired by `now` after `maxAttempts` or more attempts. */
  readonly findExhausted: (now: number, maxAttempts: number) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /** The oldest job (createdAt, then id) that is pending, or processing with a lease expired by `now`. */
  readonly nextRunnable: (now: number) => Effect.Effect<Option.Option<Job>, StoreError>
}
