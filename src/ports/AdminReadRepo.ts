import { Context, type Effect } from "effect"
import type { Account, ApiKey, LedgerEntry } from "../domain/account.js"
import type { JobCursor } from "../domain/cursor.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId } from "../domain/ids.js"
import type { Job, JobStatus } from "../domain/job.js"
import type { WaitingSummary } from "../domain/queuePosition.js"
import type { SpendGroup, SpendQuery } from "../domain/spend.js"
import type { StatsQuery, StatsRead } from "../domain/stats.js"
import type { DeliveryStatus, WebhookDelivery } from "../domain/webhook.js"

/** The budget periods in play, by their start (`periodStart`: a UTC midnight, or 0 for all time). */
export interface BudgetSpendQuery {
  readonly accountId: AccountId
  /** The key a key budget counts; null for jobs submitted without one. */
  readonly keyId: string | null
  readonly since: { readonly account?: number | undefined; readonly key?: number | undefined }
}

/** What each budget asked for has spent (charges less refunds); null for what was not asked. */
export interface BudgetSpend {
  readonly accountSpent: number | null
  readonly keySpent: number | null
}

export interface AccountQuery {
  /** A fragment of the name or the id, ASCII letters compared without case. */
  readonly search?: string | undefined
  readonly after?: JobCursor | undefined
  readonly limit: number
}

export interface AdminJobQuery {
  readonly accountId?: string | undefined
  readonly status?: JobStatus | undefined
  readonly model?: string | undefined
  /** Jobs created at or after this time (epoch ms). */
  readonly createdFrom?: number | undefined
  /** Jobs created before this time (epoch ms). */
  readonly createdBefore?: number | undefined
  readonly after?: JobCursor | undefined
  readonly limit: number
}

export interface AdminDeliveryQuery {
  readonly accountId?: string | undefined
  readonly status?: DeliveryStatus | undefined
  readonly after?: JobCursor | undefined
  readonly limit: number
}

export interface LedgerQuery {
  readonly accountId: AccountId
  /** Entries after this one, oldest first. */
  readonly after?: JobCursor | undefined
  readonly limit: number
}

/**
 * What the operator reads across accounts. Lists are keyset-paged over (createdAt, id) and
 * answer up to `limit + 1` rows, so callers can tell whether more follow: newest first, except
 * the ledger, which reads oldest first like a statement.
 */
export class AdminReadRepo extends Context.Service<AdminReadRepo, {
  readonly accounts: (query: AccountQuery) => Effect.Effect<ReadonlyArray<Account>, StoreError>
  /** Every key of the account, oldest first. */
  readonly keys: (accountId: AccountId) => Effect.Effect<ReadonlyArray<ApiKey>, StoreError>
  readonly jobs: (query: AdminJobQuery) => Effect.Effect<ReadonlyArray<Job>, StoreError>
  readonly deliveries: (query: AdminDeliveryQuery) => Effect.Effect<ReadonlyArray<WebhookDelivery>, StoreError>
  readonly ledger: (query: LedgerQuery) => Effect.Effect<ReadonlyArray<LedgerEntry>, StoreError>
  /**
   * The spend rollups of the range (of one account, or all), summed by `groupBy` and ordered
   * by it (`groupSpend` in src/domain/spend.ts says what every store answers).
   */
  readonly spend: (query: SpendQuery) => Effect.Effect<ReadonlyArray<SpendGroup>, StoreError>
  /**
   * The net spend of the account from `since.account` and of its key from `since.key`, as a
   * budgeted submit reads it under the account's lock (JobStoreDriver.chargeAccount's
   * `spendSince`), read here without the lock: what `GET /v1/account` shows of each budget. A
   * read of a few rows whatever the history, as the submit's.
   */
  readonly budgetSpend: (query: BudgetSpendQuery) => Effect.Effect<BudgetSpend, StoreError>
  /**
   * Pending and processing jobs now, and the runs (start to end) of the completed jobs that
   * ended in the range, newest end first, at most `limit`.
   */
  readonly stats: (query: StatsQuery) => Effect.Effect<StatsRead, StoreError>
  /**
   * The pending jobs per account and version (how many, their smallest and largest fair key,
   * the account's weight) and the processing jobs per version: one grouped read, what queue
   * positions are counted from (QueueBook), whatever the number of jobs waiting.
   */
  readonly waitingSummary: Effect.Effect<WaitingSummary, StoreError>
}>()("genjobs/AdminReadRepo") {}
