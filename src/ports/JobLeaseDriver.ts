import type { Effect } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { AccountId, JobId } from "../domain/ids.js"
import type { ClaimLease, Job, JobError, JobStatus, OutputItem } from "../domain/job.js"
import type { ProviderRouteRef, ProviderState } from "../domain/providerHandle.js"
import type { LimitUsage, VersionRef } from "../domain/providerLimits.js"
import type { HeldLease } from "./JobRepo.js"
import type { JobStoreDriver } from "./JobStoreDriver.js"

/** Up to `limit` runnable jobs for one lease. */
export interface ClaimBatch extends ClaimLease {
  readonly limit: number
  /** Expired leases with this many attempts are the reaper's, not a claimer's. */
  readonly maxAttempts: number
  /** Pending jobs of these versions are left to the limited claim (their provider has limits). */
  readonly exclude: ReadonlyArray<VersionRef>
}

/** Where a pending job stands in claim order, `(fairKey, id)`. */
export interface QueuePosition {
  readonly createdAt: number
  readonly id: JobId
  /**
   * The job's fair key (src/domain/fairShare.ts). A job submitted later may get a key before a
   * cursor's: a walk from a cursor finds it when it starts again from the first.
   */
  readonly fairKey: number
}

/** A job the queue relay publishes again, with its account (the broker's lane). */
export interface QueueGap {
  readonly id: JobId
  readonly accountId: AccountId
}

/** A pending job the queue relay publishes again: its place in claim order and its account. */
export interface PendingGap extends QueuePosition, QueueGap {}

/** A claim written beside endings: `limit` jobs, plus one per job of `freeing` the endings write. */
export interface ClaimBesideEnding extends ClaimBatch {
  readonly freeing: ReadonlyArray<JobId>
}

/** A claim of given jobs: runnable ones only, and no pending job of the `exclude` versions. */
export interface ClaimBatchOfIds extends ClaimLease {
  readonly maxAttempts: number
  readonly exclude: ReadonlyArray<VersionRef>
}

/** A held job's end, written only while its worker still holds it. */
export interface HeldEnding {
  readonly id: JobId
  readonly leaseOwner: string
  readonly status: JobStatus
  readonly outputs: ReadonlyArray<OutputItem> | null
  readonly error: JobError | null
  readonly completedAt: number
  /**
   * The route the job's start was sent on, when the provider ended the generation in its start
   * call (no handle was saved, so no route either); absent leaves the stored route as it is.
   */
  readonly providerRoute?: ProviderRouteRef
}

/**
 * The store's own queue, for `makeJobRepo`: who runs which job when. Claims, leases and the
 * writes a worker makes while it holds a job, each conditional on the lease, so a job has at
 * most one holder; the rules that decide (the state machine, refunds, limits) stay in
 * services/jobRepoRules.ts. Operations said to run "on their own" are atomic by themselves,
 * outside `JobStoreDriver.transaction`; the others run inside one. A store with row locks
 * skips rows another transaction holds in `claimBatch`, `pendingOf` and `findExhausted`, so
 * parallel claims take different jobs. With a queue broker (ports/JobQueue.ts) the broker says
 * which job to try and `claimIds` takes it; without one `claimBatch` picks.
 */
export interface JobLeaseDriver {
  /**
   * On its own: takes up to `limit` runnable jobs in one write: processing ones whose lease
   * expired by `now` with fewer than `maxAttempts` attempts (earliest expiry first), then pending
   * ones in claim order (createdAt, then id). Each becomes `claimedJob(job, claim)`; answers
   * them as written. The pending path reads an index in claim order and never sorts the backlog.
   */
  readonly claimBatch: (claim: ClaimBatch) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * On its own: claims the jobs of `ids` that are runnable (pending, or processing with their
   * lease expired by `claim.now` and fewer than `claim.maxAttempts` attempts), as `claimBatch`
   * does, leaving pending jobs of the `exclude` versions; answers them as written. A job another
   * claim holds is not runnable, so two claims of one id never both take it.
   */
  readonly claimIds: (ids: ReadonlyArray<JobId>, claim: ClaimBatchOfIds) => Effect.Effect<ReadonlyArray<Job>, StoreError>
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
   * Optional: gives back each lease of `leases` whose job is processing under that lease owner
   * with its provider handle stored (a started generation), in one write: no lease owner, the
   * lease expired at `now` (a store with its own clock: its now), and the claim's attempt given
   * back (`attempts - 1`), so the next claim resumes polling the handle at once and a worker's
   * shutdown costs the job no attempt. A job without a stored handle is left as it is: its run
   * may be inside the provider's start. Answers the ids it wrote. Without it a stopping worker
   * waits for its watched generations as for any run (services/watch/handBack.ts).
   */
  readonly handBackLeases?: (leases: ReadonlyArray<HeldLease>, now: number) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * Optional: puts back in the queue each job of `leases` claimed ahead and never started: one
   * still processing under that lease owner on its first pickup (`attempts` 1, `provider_phase`
   * 'starting', no provider handle), in one write, as it was pending before the claim: pending,
   * `attempts` 0, no provider phase, `provider_starts - 1`, no lease and no `started_at`. Its fair
   * key was never changed by the claim, so it takes its place in claim order again; the account's
   * count of active jobs counts it either way. Any other job is left as it is (its run may have
   * begun). Answers the ids it wrote. Without it a worker does not claim ahead of its fibers.
   */
  readonly returnUnstarted?: (leases: ReadonlyArray<HeldLease>) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * On its own: writes each job's provider state only while the job is processing under its
   * `leaseOwner`'s lease, all in one write; answers the ids it wrote. A state without `route`
   * leaves the stored route. It waits for transactions holding the jobs.
   */
  readonly updateProviderStates: (
    states: ReadonlyArray<{ readonly id: JobId; readonly leaseOwner: string; readonly state: ProviderState }>
  ) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * Ends each job still processing under its `leaseOwner`'s lease, in one write: `status`,
   * `outputs`, `error`, `completedAt` and (when given) `providerRoute` set, the lease released,
   * nothing else touched, and each ended job's changes feed entry (`changeOf` of the job as
   * written, src/domain/change.ts) written in the same write. Answers the jobs it wrote, as written.
   */
  readonly finishHeld: (endings: ReadonlyArray<HeldEnding>) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Optional: `finishHeld` of those of `endings` whose job has no webhook URL, in one write of its
   * own, outside any transaction (such an ending writes no delivery, so nothing must commit with
   * it); answers the jobs it wrote. Where a round trip is dear (PostgreSQL) this spares the
   * completion batch its `BEGIN` and `COMMIT`; without it every ending goes through a transaction.
   */
  readonly finishHeldWithoutWebhook?: (endings: ReadonlyArray<HeldEnding>) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Optional: `finishHeldWithoutWebhook(endings)` and `claimBatch(claim)` in one write of its own,
   * the claim taking up to `claim.limit` jobs plus one for each job of `claim.freeing` the write
   * ends (the fibers those endings free are the ones it claims for), none when that sum is below
   * 0 (`claim.limit` may be negative), and never a job the write ends. Answers the jobs ended and the jobs claimed, each as written. Where a round trip is dear
   * (PostgreSQL) a worker's next claim then costs no statement, commit or round trip of its own;
   * without it the store ends, then claims, in two steps (services/jobRepo/endings.ts).
   */
  readonly finishHeldAndClaim?: (
    endings: ReadonlyArray<HeldEnding>,
    claim: ClaimBesideEnding
  ) => Effect.Effect<{ readonly ended: ReadonlyArray<Job>; readonly claimed: ReadonlyArray<Job> }, StoreError>
  /** Up to `limit` processing jobs whose lease expired by `now` after `maxAttempts` or more attempts. */
  readonly findExhausted: (now: number, maxAttempts: number, limit: number) => Effect.Effect<ReadonlyArray<Job>, StoreError>
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
  }) => Effect.Effect<{ readonly pending: ReadonlyArray<PendingGap>; readonly expired: ReadonlyArray<QueueGap> }, StoreError>
  /**
   * Gives the lease `name` to `owner` until `expiresAt` when it is free, expired by `now` or
   * already `owner`'s; false when another owner holds it. The reaper and the relay run one pass
   * at a time across processes under such a lease.
   */
  readonly takeLease: (name: string, owner: string, now: number, expiresAt: number) => Effect.Effect<boolean, StoreError>
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
  /**
   * Whether any of `versions` has a pending job, read without locks: a claim asks it instead of
   * counting the limits' room in a transaction while it last found none waiting.
   */
  readonly anyPending: (versions: ReadonlyArray<VersionRef>) => Effect.Effect<boolean, StoreError>
  /** Per version, its `limit` oldest pending jobs in claim order, skipping rows another transaction holds. */
  readonly pendingOf: (
    versions: ReadonlyArray<VersionRef & { readonly limit: number }>
  ) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /** Counts starts at `now` in each scope's bucket of the minute window (bucketOf(MINUTE_WINDOW, now)). */
  readonly recordStarts: (
    starts: ReadonlyArray<{ readonly scope: string; readonly count: number }>,
    now: number
  ) => Effect.Effect<void, StoreError>
  /** Drops buckets (rate windows and provider starts) too old to count in any window at `now`. */
  readonly pruneWindows: (now: number) => Effect.Effect<void, StoreError>
  /**
   * On its own, after a reaper pass: folds up to `limit` job ends kept apart from their
   * accounts' counts of active jobs (PostgreSQL's `active_job_ends`) into those counts, skipping
   * ends another statement is folding, so the ends of accounts that stopped submitting do not
   * pile up. Any count read before or after answers the same. A store that counts ends in place
   * has nothing to fold.
   */
  readonly foldJobEnds: (limit: number) => Effect.Effect<void, StoreError>
}

/** Both halves of a job store, as `makeJobRepo` takes them. */
export interface JobDrivers {
  readonly store: JobStoreDriver
  readonly leases: JobLeaseDriver
}
