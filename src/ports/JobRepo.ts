import { Context, type Effect, type Option } from "effect"
import type { InvalidApiKey, UnauthorizedAccess } from "../domain/accessRefusals.js"
import type { ConcurrentJobsExceeded, IdempotencyKeyReused, InsufficientBalance } from "../domain/admission.js"
import type { Budget, BudgetExceeded, BudgetScope } from "../domain/budget.js"
import type { RateLimits } from "../domain/catalog.js"
import type { JobCursor } from "../domain/cursor.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId, JobId } from "../domain/ids.js"
import type { ClaimLease, Job, JobCannotBeCancelled, JobError, JobNotFound, JobStatus, OutputItem } from "../domain/job.js"
import type { ProviderRouteRef, ProviderState } from "../domain/providerHandle.js"
import type { LimitPlan } from "../domain/providerLimits.js"
import type { RateLimitExceeded } from "../domain/rateLimit.js"
import type { PendingGap, QueueGap, QueuePosition } from "./JobLeaseDriver.js"

export interface IdempotencyClaim {
  readonly key: string
  /** Hash of the canonical request body; the same key with another hash is refused. */
  readonly requestHash: string
  /** Records older than this (epoch ms) are ignored and replaced. */
  readonly notBefore: number
}

/** The lease of an idle worker of this process that offers to take a submitted job at once. */
export interface HandOffLease extends ClaimLease {
  /** As in ClaimOptions: an expired lease under it is runnable, so the job waits behind it. */
  readonly maxAttempts: number
}

export interface SubmitCommand {
  readonly job: Job
  readonly maxConcurrentJobs: number
  readonly rateLimits: RateLimits
  readonly idempotency?: IdempotencyClaim
  /** The budgets of the calling key and its account the submit is held to (none: no cap). */
  readonly budgets?: ReadonlyArray<{ readonly scope: BudgetScope; readonly budget: Budget }> | undefined
  /**
   * An idle worker of this process, reserved for this job (LocalWorkers): the job is written as
   * that worker's claim (`claimedJob`) when nothing older is runnable, and stays pending otherwise.
   */
  readonly handOff?: HandOffLease | undefined
}

export type SubmitOutcome =
  /**
   * The job as stored: pending, or processing when it was handed off to the local worker.
   * `claimersWoken`: the store's write itself woke the claimers of its own queue as it committed
   * (JobStoreDriver.submitWakesClaimers), so the caller sends no signal for this job.
   */
  | { readonly _tag: "Created"; readonly job: Job; readonly claimersWoken?: boolean }
  | { readonly _tag: "Replayed"; readonly job: Job }

export interface ListQuery {
  readonly accountId: AccountId
  readonly status?: JobStatus
  readonly model?: string
  readonly after?: JobCursor
  readonly limit: number
}

export interface ClaimOptions {
  readonly workerId: string
  readonly now: number
  readonly leaseMs: number
  /** Claims a job at most this many times; an expired lease past it fails the job with a refund. */
  readonly maxAttempts: number
  /**
   * The providers' limits (limitPlanOf the catalog): a pending job of a limited version is
   * claimed only while every limit it counts in has room, and otherwise stays pending.
   */
  readonly limits?: LimitPlan | undefined
  /**
   * Claims only pending jobs of limited versions: a queue broker delivers the rest (see
   * `claimIds`), so the store's own queue is not read for them.
   */
  readonly limitedOnly?: boolean | undefined
  /**
   * Rides on this worker's completions instead of a claim of its own (see ClaimRider): answers
   * once its claim went with a completion batch, or none at once when the rider is woken. Pending
   * jobs of `limits`' versions are left to a claim of their own.
   */
  readonly besideEndings?: ClaimRider | undefined
}

/** How a riding claim went, as it was sent: the idle fibers it took, its limit and its time (its `now`). */
export interface RiderOutcome {
  readonly fromIdle: number
  readonly limit: number
  readonly at: number
}

/**
 * A worker's claim made to ride on its own jobs' completions (ClaimOptions.besideEndings): it
 * waits for the next completion batch that ends one of its jobs and is written with those endings
 * (JobLeaseDriver.finishHeldAndClaim where the store has it), claiming one job for each fiber
 * those endings free and one for each fiber idle then. The worker's side; the store calls it.
 */
export interface ClaimRider {
  /** Whether the completion of a job held under this lease owner frees a fiber the claim is for. */
  readonly frees: (leaseOwner: string) => boolean
  /**
   * As the claim is sent: takes up to `max` of the fibers idle then, and answers how many the
   * store claims beside one for each ending that frees a fiber; below 0 to claim fewer than
   * those endings (the fibers they free have work already), the claim's size floored at 0.
   */
  readonly takeIdle: (max: number) => number
  /**
   * While the claim waits, the store hands its wake-up here (undefined once it stopped waiting):
   * the worker calls it when a fiber frees without a completion, and the claim answers none.
   */
  readonly waiting: (wake: (() => void) | undefined) => void
  /**
   * Called once per claim, before it answers: how it went, and the jobs it claimed. Its caller
   * may have been interrupted meanwhile (a worker's drain): the worker runs them all the same,
   * so none waits out its lease.
   */
  readonly settled: (outcome: RiderOutcome, claimed: ReadonlyArray<Job>) => void
}

export interface ReapOptions {
  /** Holds the pass for `passMs`: one process reaps at a time, another takes over when it stops. */
  readonly workerId: string
  readonly now: number
  readonly passMs: number
  readonly maxAttempts: number
  /** Jobs abandoned per pass at most. */
  readonly limit: number
}

export interface QueueGapOptions {
  readonly workerId: string
  readonly now: number
  readonly passMs: number
  /** Jobs younger than this (since their submit, or their lease's end) are left to the broker. */
  readonly graceMs: number
  /** Where the last pass's pending jobs ended: this pass goes on after it (null: from the oldest). */
  readonly after: QueuePosition | null
  readonly maxAttempts: number
  readonly limit: number
}

export interface QueueGaps {
  readonly pending: ReadonlyArray<PendingGap>
  readonly expired: ReadonlyArray<QueueGap>
}

/** A job's lease as the worker holding it knows it. */
export interface HeldLease {
  readonly id: JobId
  readonly workerId: string
}

export interface CancelOutcome {
  readonly job: Job
  readonly refundedMicroCents: number
}

/**
 * What a submit's atomic unit refuses: an idempotency key reused, the admission rules
 * (domain/admission.ts, budget.ts), and the key's INVALID_API_KEY when its account is gone.
 */
export type SubmitRefusal =
  | IdempotencyKeyReused
  | RateLimitExceeded
  | ConcurrentJobsExceeded
  | InsufficientBalance
  | BudgetExceeded
  | InvalidApiKey

/** What a cancel refuses: a job unknown, another account's, or no longer pending. */
export type CancelRefusal = JobNotFound | UnauthorizedAccess | JobCannotBeCancelled

/**
 * Jobs, their charges and refunds, and the queue they form. Each operation is one atomic unit
 * in every adapter: the charge, the job row and its idempotency record commit together; a
 * terminal state and its refund commit together. Every status change goes through
 * `transition` of domain/job.ts.
 */
export class JobRepo extends Context.Service<JobRepo, {
  /**
   * Within one atomic unit: replays a matching idempotency record; else checks rate limits,
   * the concurrent-job maximum and the balance, then inserts the job and its charge.
   */
  readonly submit: (command: SubmitCommand) => Effect.Effect<SubmitOutcome, SubmitRefusal | StoreError>
  readonly get: (id: JobId) => Effect.Effect<Option.Option<Job>, StoreError>
  /** The jobs of `ids` that exist, in no particular order, in one read (the watchers' sweep). */
  readonly getMany: (ids: ReadonlyArray<JobId>) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /** Newest first; returns up to `limit + 1` jobs so callers can tell whether more follow. */
  readonly list: (query: ListQuery) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  readonly cancel: (
    id: JobId,
    accountId: AccountId,
    now: number
  ) => Effect.Effect<CancelOutcome, CancelRefusal | StoreError>
  /** Takes the next runnable job (an expired lease, else the oldest pending job) for a worker. */
  readonly claim: (options: ClaimOptions) => Effect.Effect<Option.Option<Job>, StoreError>
  /**
   * Takes up to `limit` runnable jobs under one lease in one atomic unit, oldest first. Expired
   * leases whose attempts are used up are left to `reap`.
   */
  readonly claimBatch: (options: ClaimOptions & { readonly limit: number }) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * Claims those of `ids` that are runnable, under one lease, as `claimBatch` does: what a
   * queue broker delivered. Pending jobs of versions under provider limits are left to
   * `claimBatch`, which counts their room. Answers the jobs claimed; any other id is a duplicate
   * delivery, a job that ended, or one another claim holds.
   */
  readonly claimIds: (ids: ReadonlyArray<JobId>, options: ClaimOptions) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /**
   * The queue relay's pass, while this process holds (or takes) it for `passMs`: what a broker
   * may have lost (`JobLeaseDriver.queueGaps`). None when another process holds the pass.
   */
  readonly queueGaps: (options: QueueGapOptions) => Effect.Effect<Option.Option<QueueGaps>, StoreError>
  /**
   * The queue's periodic pass: fails processing jobs whose lease expired after their last
   * attempt, with a refund, and drops spent rate-limit buckets. Answers how many jobs it failed;
   * 0 when another process holds the pass.
   */
  readonly reap: (options: ReapOptions) => Effect.Effect<number, StoreError>
  /**
   * Extends every lease of `leases` still held to `leaseMs` from now, in one write (one
   * statement on SQL stores, whatever their number); answers the ids still held.
   */
  readonly renewLeases: (
    leases: ReadonlyArray<HeldLease>,
    now: number,
    leaseMs: number
  ) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * Present when the store can hand leases back (`JobLeaseDriver.handBackLeases`): gives back the
   * leases of `leases` whose generation was started (handle stored), in one write, for another
   * claim to resume at once with no attempt spent; answers the ids handed back.
   */
  readonly handBackLeases?: (leases: ReadonlyArray<HeldLease>, now: number) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /**
   * Present when the store can put claimed jobs back (`JobLeaseDriver.returnUnstarted`): the jobs
   * of `leases` claimed and never started (first pickup, no provider handle) go back to pending
   * with no attempt spent, in one write; answers the ids put back. A worker that claims ahead of
   * its fibers gives back the jobs it did not start when it stops.
   */
  readonly returnUnstarted?: (leases: ReadonlyArray<HeldLease>) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /** Writes the job's provider phase, handle and start count, only for the lease holder; false when the lease was lost. */
  readonly saveProviderState: (id: JobId, workerId: string, state: ProviderState) => Effect.Effect<boolean, StoreError>
  /**
   * processing -> completed, only for the lease holder. None when the lease was lost.
   * `providerRoute` is recorded with the end when given: the route of a start the provider
   * answered with its ending, so no handle (and no route) was saved before.
   */
  readonly complete: (
    id: JobId,
    workerId: string,
    outputs: ReadonlyArray<OutputItem>,
    now: number,
    providerRoute?: ProviderRouteRef
  ) => Effect.Effect<Option.Option<Job>, StoreError>
  /**
   * -> failed with a refund of what was charged. With a worker id only the lease holder may fail
   * a processing job; without one, a pending or processing job is abandoned. `providerRoute` as
   * for `complete`.
   */
  readonly fail: (
    id: JobId,
    workerId: string | null,
    error: JobError,
    now: number,
    providerRoute?: ProviderRouteRef
  ) => Effect.Effect<Option.Option<Job>, StoreError>
}>()("genjobs/JobRepo") {}
