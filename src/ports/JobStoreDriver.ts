import type { Effect, Option } from "effect"
import type { Account } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId, ApiKeyId, JobId } from "../domain/ids.js"
import type { Job, JobStatus } from "../domain/job.js"
import type { RateWindow, WindowUsage } from "../domain/rateLimit.js"
import type { WebhookDelivery } from "../domain/webhook.js"
import type { HandOffLease, ListQuery } from "./JobRepo.js"

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
  /** The job's key, model and submit time: the spend rollup the line is counted in (hourOf the submit). */
  readonly keyId: ApiKeyId | null
  readonly model: string
  readonly chargedAt: number
  /** How the job ended, counted in the rollup's `failed` or `cancelled`. */
  readonly outcome: "failed" | "cancelled"
}

/** A job's charge: its ledger line and its spend rollup (the rollup's hour is hourOf(now)). */
export interface JobCharge {
  readonly accountId: AccountId
  readonly jobId: JobId
  readonly keyId: ApiKeyId | null
  readonly model: string
  readonly costMicroCents: number
  readonly now: number
  /**
   * Budget periods in play, by their start: after charging, the net spend (charges less refunds)
   * of the account, and of the key, in rollup hours from that start is read under the account's
   * lock, this charge included.
   */
  readonly spendSince?: { readonly account?: number | undefined; readonly key?: number | undefined } | undefined
}

/** The charge of `job` as submitted, with the key and model its spend rollup counts it under. */
export const chargeOf = (job: Job): JobCharge => ({
  accountId: job.accountId,
  jobId: job.id,
  keyId: job.apiKeyId ?? null,
  model: job.model,
  costMicroCents: job.costMicroCents,
  now: job.createdAt
})

/** What a charge that went through answers. */
export interface Charged {
  /** The balance before the charge. */
  readonly balanceBefore: number
  /** The spend asked for by `spendSince`, this charge included; null when not asked. */
  readonly accountSpent: number | null
  readonly keySpent: number | null
}

/** The submits a rate limit counts together: one account on one model version. */
export interface RateKey {
  readonly accountId: AccountId
  readonly model: string
  readonly version: string
}

/** A rate window a gated submit admits while the window counts at most `mostBefore` submits. */
export interface WindowGate {
  readonly windowMs: number
  /** The window's bucket of the submit (bucketOf): where the submit is counted when admitted. */
  readonly bucket: number
  readonly mostBefore: number
}

/**
 * What a gated submit admits on, besides the balance and the active jobs: bounds computed in
 * src/ (submitGates) from the rules that refuse, so a store compares and never decides.
 */
export interface SubmitGates {
  readonly idempotency: { readonly key: string; readonly record: IdempotencyRecord; readonly notBefore: number } | undefined
  readonly minute: WindowGate | undefined
  readonly day: WindowGate | undefined
  /** Budget periods by their start: admitted while the net spend since then is at most `mostBefore`. */
  readonly accountSpend: { readonly since: number; readonly mostBefore: number } | undefined
  readonly keySpend: { readonly since: number; readonly mostBefore: number } | undefined
}

/** What a gated submit wrote: the job, nothing but a live record of its key, or nothing (decide in a transaction). */
export type GatedSubmit =
  | { readonly _tag: "Created"; readonly job: Job }
  /** The key's live record; its job when the statement could already see it. */
  | { readonly _tag: "Recorded"; readonly record: IdempotencyRecord; readonly job: Option.Option<Job> }
  | { readonly _tag: "Declined" }

/**
 * What a job store must keep for `makeJobRepo` (services/jobRepoRules.ts), which owns every rule:
 * the state machine, refunds, webhooks, ownership, idempotency and admission. A driver only
 * reads and writes; it decides nothing. A store with row locks holds what `lock…` and
 * `chargeAccount` touch until the enclosing `transaction` ends. The store's own queue (claims,
 * leases, the writes of a held job) is the other half of a driver: JobLeaseDriver.
 */
export interface JobStoreDriver {
  /** Runs `effect` as one atomic unit: all of its writes commit, or none do. Never nested. */
  readonly transaction: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E | StoreError>
  /** Reads the account and holds it until the transaction ends, so its submits run one at a time. */
  readonly lockAccount: (id: AccountId) => Effect.Effect<Option.Option<Account>, StoreError>
  /**
   * Takes `costMicroCents` off the balance and writes the charge's ledger line (none for a zero
   * cost) and its spend rollup (one more job, free ones too), only while the balance covers it;
   * holds the account until the transaction ends. Answers the balance before the charge and the
   * spend `spendSince` asks for; None, writing and holding nothing, when the account is missing
   * or its balance falls short.
   */
  readonly chargeAccount: (charge: JobCharge) => Effect.Effect<Option.Option<Charged>, StoreError>
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
   * A submit without idempotency key or rate limits as one atomic write, outside any
   * transaction: charges the job's cost with its ledger line and inserts the job as `insertJob`
   * does, only while the balance covers the cost and fewer than `maxConcurrentJobs` of the
   * account's jobs are active (it may count too many, never too few). Answers the job as
   * inserted; None when it wrote nothing: the caller then decides, and says why, in a
   * transaction. PostgreSQL writes it in one statement (one round trip).
   */
  readonly submit: (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined) => Effect.Effect<Option.Option<Job>, StoreError>
  /**
   * Whether `submit` of a queued job (no `handOff`) wakes the store's claimers itself, as it
   * commits (PostgreSQL's statement NOTIFYs on the store's own queue): the caller then sends no
   * signal of its own for it. Absent or false, the caller wakes them once the job is stored.
   */
  readonly submitWakesClaimers?: boolean | undefined
  /**
   * `submit` with an idempotency key, rate windows or budgets, in one round trip, where the
   * store can (PostgreSQL); absent, such a submit runs the transaction. Claims the key (a live
   * record of it: nothing written, the record answered), takes the account's lock, and writes
   * the charge, the job and the windows' counts only when every bound of `gates` holds and
   * `submit`'s conditions do; Declined, having written nothing, otherwise.
   */
  readonly submitGated?:
    | ((job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined, gates: SubmitGates) => Effect.Effect<GatedSubmit, StoreError>)
    | undefined
  /**
   * Inserts the job and answers it as written. With `handOff`, when no job is runnable
   * (pending, or an expired lease under `handOff.maxAttempts`), the job is inserted as that
   * idle worker's claim instead (`claimedJob(job, handOff)`, its lease on the lease clock as a
   * claim's) and nobody is woken; otherwise the caller wakes the claimers once it committed.
   */
  readonly insertJob: (job: Job, handOff: HandOffLease | undefined) => Effect.Effect<Job, StoreError>
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
  readonly getJob: (id: JobId) => Effect.Effect<Option.Option<Job>, StoreError>
  /** The jobs of `ids` that exist, in no particular order: one statement for many. */
  readonly getJobs: (ids: ReadonlyArray<JobId>) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  /** `getJob`, holding the row until the transaction ends. */
  readonly lockJob: (id: JobId) => Effect.Effect<Option.Option<Job>, StoreError>
  /**
   * Writes `next` only while the stored row still has the expected status and attempts; false
   * when it no longer does, and then nothing is written. When `next` has ended, its changes feed
   * entry (`changeOf(next, now)`, src/domain/change.ts; ports/ChangeFeed.ts) is written in the
   * same write: an entry is read only once its ending committed, and never placed before an
   * entry some read already answered.
   */
  readonly updateJob: (
    next: Job,
    expected: { readonly status: JobStatus; readonly attempts: number },
    now: number
  ) => Effect.Effect<boolean, StoreError>
  /**
   * Writes the ledger line, moves the balance by its amount and counts it in its spend rollup,
   * in that order (the account's row before the rollup's, as a charge takes them). At most one
   * line per (job, kind): a second one writes and moves nothing and answers false. A zero amount
   * writes no line and moves nothing: it only counts the job's outcome in the rollup.
   */
  readonly postLedger: (entry: JobLedgerEntry) => Effect.Effect<boolean, StoreError>
  readonly insertDeliveries: (deliveries: ReadonlyArray<WebhookDelivery>) => Effect.Effect<void, StoreError>
  /** Newest first over (createdAt, id), up to `limit + 1` jobs. */
  readonly listJobs: (query: ListQuery) => Effect.Effect<ReadonlyArray<Job>, StoreError>
}
