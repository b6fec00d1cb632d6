import type { Effect, Option } from "effect"
import type { Account } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId, JobId } from "../domain/ids.js"
import type { ClaimLease, Job, JobError, JobStatus, OutputItem } from "../domain/job.js"
import type { ProviderState } from "../domain/providerHandle.js"
import type { LimitUsage, VersionRef } from "../domain/providerLimits.js"
import type { RateWindow, WindowUsage } from "../domain/rateLimit.js"
import type { WebhookDelivery } from "../domain/webhook.js"
import type { HandOffLease, HeldLease, ListQuery } from "./JobRepo.js"

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

/** The submits a rate limit counts together: one account on one model version. */
export interface RateKey {
  readonly accountId: AccountId
  readonly model: string
  readonly version: string
}

/** Up to `limit` runnable jobs for one lease. */
export interface ClaimBatch extends ClaimLease {
  readonly limit: number
  /** Expired leases with this many attempts are the reaper's, not a claimer's. */
  readonly maxAttempts: number
  /** Pending jobs of these versions are left to the limited claim (their provider has limits). */
  readonly exclude: ReadonlyArray<VersionRef>
}

/** Where a pending job stands in claim order. */
export interface QueuePosition {
  readonly createdAt: number
  readonly id: JobId
}

/** A claim of given jobs: runnable ones only, and no pending job of the `exclude` versions. */
export interface ClaimBatchOfIds extends ClaimLease {
  readonly maxAttempts: number
  readonly exclude: ReadonlyArray<VersionRef>
}

/**
 * What a job store must do for `makeJobRepo` (services/jobRepoRules.ts), which owns every rule:
 * the state machine, refunds, webhooks, ownership, idempotency and admission. A driver only
 * reads and writes; it decides nothing. A store with row locks holds what `lock…`,
 * `chargeAccount`, `claimBatch` and `findExhausted` touch until the enclosing `transaction`
 * ends; the last two skip rows another transaction holds, so parallel claims take different jobs.
 */
export interface JobStoreDriver {
  /** Runs `effect` as one atomic unit: all of its writes commit, or none do. Never nested. */
  readonly transaction: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | StoreError>
  /** Reads the account and holds it until the transaction ends, so its submits run one at a time. */
  readonly lockAccount: (id: AccountId) => Effect.Effect<Option.Option<Account>, StoreError>
  /**
   * Takes `costMicroCents` off the balance and writes the charge's ledger line (none for a zero
   * cost), only while the balance covers it; holds the account until the transaction ends.
   * Answers the balance before the charge; None, writing and holding nothing, when the account
   * is missing or its balance falls short.
   */
  readonly chargeAccount: (charge: {
    readonly accountId: AccountId
    readonly jobId: JobId
    readonly costMicroCents: number
    readonly now: number
  }) => Effect.Effect<Option.Option<number>, StoreError>
  /**
   * Saves `record` as (accountId, key) unless a record of it created at or after `notBefore`
   * exists: then writes nothing and answers that one. A parallel claim of the same key waits
   * for this transaction and then sees its record.
   */
  readonly claimIdempotency: (
    accountId: AccountId,
    key: string,
    record: IdempotencyRecord,
    notBefore: number
  ) => Effect.Effect<Option.Option<IdempotencyRecord>, StoreError>
  /** The account's jobs that count against its maximum (`activeStatuses`), as of now. */
  readonly activeJobs: (accountId: AccountId) => Effect.Effect<number, StoreError>
  /**
   * Optional, for a store where a transaction costs round trips: a submit without idempotency
   * key or rate limits in one atomic write. Charges the job's cost with its ledger line and
   * inserts the job, only while the balance covers the cost and fewer than `maxConcurrentJobs`
   * of the account's jobs are active (it may count too many, never too few). With `handOff`,
   * when no job is runnable (pending, or an expired lease under `maxAttempts`), it inserts
   * `claimedJob(job, handOff)` instead, its lease on the lease clock as a claim's; otherwise it
   * wakes claimers as `insertJob` does. Answers the job as inserted; None when it wrote
   * nothing: the caller then decides in a transaction.
   */
  readonly submitAtOnce?:
    | ((job: Job, maxConcurrentJobs: number, handOff?: HandOffLease) => Effect.Effect<Option.Option<Job>, StoreError>)
    | undefined
  /**
   * Optional, for a store that can hand a submit to an idle worker of the submitting process:
   * inserts `claimedJob(job, handOff)` (its lease on the lease clock, as a claim's) only while
   * no job is runnable (pending, or an expired lease under `handOff.maxAttempts`), and answers
   * it; None, writing nothing, when one is. Called in the submit's transaction, where `insertJob`
   * then queues the job.
   */
  readonly insertClaimed?: ((job: Job, handOff: HandOffLease) => Effect.Effect<Option.Option<Job>, StoreError>) | undefined
  /**
   * Per window, in order: the submits of its buckets whose oldest submit is after `now` minus
   * the window, and that oldest submit.
   */
  readonly readRateWindows: (
    key: RateKey,
    now: number,
    windows: ReadonlyArray<RateWindow>
  ) => Effect.Effect<ReadonlyArray<WindowUsage>, StoreError>
  /** Counts one submit at `now` in each window's bucket of `now` (bucketOf). */
  readonly recordRateWindows: (key: RateKey, now: number, windows: ReadonlyArray<RateWindow>) => Effect.Effect<void, StoreError>
  /** Drops buckets (rate windows and provider starts) too old to count in any window at `now`. */
  readonly pruneRateWindows: (now: number) => Effect.Effect<void, StoreError>
  /**
   * Optional, for a store that writes a job's end apart from its account's count of active jobs
   * (PostgreSQL's `active_job_ends`): folds up to `limit` ends into their accounts' counts,
   * skipping ends another statement is folding, so the ends of accounts that stopped submitting
   * do not pile up. Any count read before or after answers the same.
   */
  readonly foldJobEnds?: ((limit: number) => Effect.Effect<void, StoreError>) | undefined
  /**
   * Inserts the job. A store shared by processes also wakes their claimers (PostgreSQL sends
   * NOTIFY here), delivered when the transaction commits.
   */
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
   * Writes each job's provider state only while the job is processing under its `leaseOwner`'s
   * lease, all in one write; answers the ids it wrote. Called on its own, outside `transaction`:
   * it must be atomic by itself and wait for transactions holding the jobs.
   */
  readonly updateProviderStates: (
    states: ReadonlyArray<{ readonly id: JobId; readonly leaseOwner: string; readonly state: ProviderState }>
  ) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * Ends each job still processing under its `leaseOwner`'s lease, in one write: `status`,
   * `outputs`, `error` and `completedAt` set, the lease released, nothing else touched. Answers
   * the jobs it wrote, as written.
   */
  readonly finishHeld: (
    endings: ReadonlyArray<{
      readonly id: JobId
      readonly leaseOwner: string
      readonly status: JobStatus
      readonly outputs: ReadonlyArray<OutputItem> | null
      readonly error: JobError | null
      readonly completedAt: number
    }>
  ) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Writes the ledger line and moves the balance by its amount. At most one line per (job, kind):
   * a second one writes and moves nothing and answers false.
   */
  readonly postLedger: (entry: JobLedgerEntry) => Effect.Effect<boolean, StoreError>
  readonly insertDeliveries: (deliveries: ReadonlyArray<WebhookDelivery>) => Effect.Effect<void, StoreError>
  /** Newest first over (createdAt, id), up to `limit + 1` jobs. */
  readonly listJobs: (query: ListQuery) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Takes up to `limit` runnable jobs in one write: processing ones whose lease expired by `now`
   * with fewer than `maxAttempts` attempts (earliest expiry first), then pending ones in claim
   * order (createdAt, then id). Each becomes `claimedJob(job, claim)`; answers them as written.
   * The pending path reads an index in claim order and never sorts the backlog. Called on its
   * own, outside `transaction`: it must be atomic by itself.
   */
  readonly claimBatch: (claim: ClaimBatch) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Sets the lease expiry of each job of `leases` that is processing under that lease owner, in
   * one write; answers the ids it wrote. A store with its own clock sets `leaseExpiresAt - now`
   * from its clock instead.
   */
  readonly renewLeases: (
    leases: ReadonlyArray<HeldLease>,
    now: number,
    leaseExpiresAt: number
  ) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * Holds the provider limits until the transaction ends: limited claims run one at a time, in
   * every process sharing the store, so none counts room another is taking.
   */
  readonly lockProviderLimits: Effect.Effect<void, StoreError>
  /**
   * Jobs processing per version of `versions` (those with none may be left out), and the starts
   * recorded per scope of `scopes` whose oldest is after `now` minus a minute.
   */
  readonly readLimitUsage: (
    versions: ReadonlyArray<VersionRef>,
    scopes: ReadonlyArray<string>,
    now: number
  ) => Effect.Effect<LimitUsage, StoreError>
  /** Per version, its `limit` oldest pending jobs in claim order, skipping rows another transaction holds. */
  readonly pendingOf: (
    versions: ReadonlyArray<VersionRef & { readonly limit: number }>
  ) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Claims the jobs of `ids` that are runnable (pending, or processing with their lease expired
   * by `claim.now` and fewer than `claim.maxAttempts` attempts), as `claimBatch` does, leaving
   * pending jobs of the `exclude` versions; answers them as written. A job another claim holds
   * is not runnable, so two claims of one id never both take it.
   */
  readonly claimIds: (ids: ReadonlyArray<JobId>, claim: ClaimBatchOfIds) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * What a queue broker may have lost, for the relay that publishes it again: up to `limit`
   * pending jobs created `graceMs` or more before `now`, in claim order after `after` (null:
   * from the first), and up to `limit` processing jobs whose lease expired `graceMs` or more
   * before `now` (on the lease clock) with fewer than `maxAttempts` attempts.
   */
  readonly queueGaps: (gaps: {
    readonly now: number
    readonly graceMs: number
    readonly after: QueuePosition | null
    readonly maxAttempts: number
    readonly limit: number
  }) => Effect.Effect<{ readonly pending: ReadonlyArray<QueuePosition>; readonly expired: ReadonlyArray<JobId> }, StoreError>
  /** Counts starts at `now` in each scope's bucket of the minute window (bucketOf(MINUTE_WINDOW, now)). */
  readonly recordStarts: (
    starts: ReadonlyArray<{ readonly scope: string; readonly count: number }>,
    now: number
  ) => Effect.Effect<void, StoreError>
  /** Up to `limit` processing jobs whose lease expired by `now` after `maxAttempts` or more attempts. */
  readonly findExhausted: (now: number, maxAttempts: number, limit: number) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Gives the lease `name` to `owner` until `expiresAt` when it is free, expired by `now` or
   * already `owner`'s; false when another owner holds it.
   */
  readonly takeLease: (name: string, owner: string, now: number, expiresAt: number) => Effect.Effect<boolean, StoreError>
}
