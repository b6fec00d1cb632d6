import { Context, type Effect } from "effect"
import type { ChangePosition, ChangeRead } from "../domain/change.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId } from "../domain/ids.js"

/** One read of the feed. */
export interface ChangeQuery {
  /** One account's entries; undefined for every account's (a process's stream reader). */
  readonly accountId: AccountId | undefined
  /** Entries strictly after this position. */
  readonly after: ChangePosition
  /** Entries at or before this one only; undefined for no bound. */
  readonly upTo: ChangePosition | undefined
  /** Up to this many entries; 0 reads only how far the feed is settled. */
  readonly limit: number
}

/**
 * The changes feed as a store keeps it (the entries are written by the job store's driver, in the
 * write of each ending: JobStoreDriver.updateJob, JobLeaseDriver.finishHeld). A read answers only entries that can
 * no longer be preceded by another: an entry committing later always comes after every entry a
 * read answered, in every process sharing the store. The store reads and deletes; it decides nothing.
 */
export class ChangeFeed extends Context.Service<ChangeFeed, {
  /** Entries after `after`, in feed order, and the settled position (ChangeRead), in one snapshot. */
  readonly read: (query: ChangeQuery) => Effect.Effect<ChangeRead, StoreError>
  /**
   * Deletes up to `limit` of the oldest entries in feed order, those of them that ended before
   * `endedBefore`; answers how many. Fewer than `limit` means the old end is reached.
   */
  readonly purge: (endedBefore: number, limit: number) => Effect.Effect<number, StoreError>
}>()("genjobs/ChangeFeed") {}
