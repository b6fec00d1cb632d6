import { Effect } from "effect"
import { comparePositions, type JobChange } from "../../src/domain/change.js"
import { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import type { MemoryState } from "./state.js"

/**
 * Appends entries inside the state's transaction, with the undo that takes them back. A seq
 * drawn by a transaction that failed is not drawn again, as a database sequence's is not.
 */
export const appendChanges = (state: MemoryState, changes: ReadonlyArray<JobChange>, undo: Array<() => void>) => {
  const feed = state.changes
  const length = feed.entries.length
  undo.push(() => void feed.entries.splice(length))
  for (const change of changes) feed.entries.push({ ...change, position: { txn: 0, seq: ++feed.seq } })
}

/** The first index whose entry comes after `seq`: the entries are in seq order. */
const firstAfter = (entries: ReadonlyArray<{ readonly position: { readonly seq: number } }>, seq: number) => {
  let low = 0
  let high = entries.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (entries[middle]!.position.seq <= seq) low = middle + 1
    else high = middle
  }
  return low
}

/**
 * The feed in memory. Reads take the state's lock, as a transaction does: an entry is seen only
 * once its ending's transaction is over, and in the order its seq was drawn, which is the
 * order of the transactions (they run one at a time).
 */
export const memoryChangeFeed = (state: MemoryState) =>
  ChangeFeed.of({
    read: ({ accountId, after, limit, upTo }) =>
      state.lock.withPermits(1)(Effect.sync(() => {
        const entries = []
        const all = state.changes.entries
        for (let i = firstAfter(all, after.seq); i < all.length && entries.length < limit; i++) {
          const entry = all[i]!
          if (upTo !== undefined && comparePositions(entry.position, upTo) > 0) break
          if (accountId === undefined || entry.accountId === accountId) entries.push(entry)
        }
        return { entries, settled: { txn: 0, seq: state.changes.seq } }
      })),
    purge: (endedBefore, limit) =>
      state.lock.withPermits(1)(Effect.sync(() => {
        const entries = state.changes.entries
        let n = 0
        while (n < limit && n < entries.length && entries[n]!.endedAt < endedBefore) n++
        entries.splice(0, n)
        return n
      }))
  })
