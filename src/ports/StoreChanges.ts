import { Context, Effect } from "effect"

/**
 * What a process caches from the store and must hear of when it changes: API keys and the
 * settings of accounts (`access`), and the catalog (`catalog`).
 */
export type ChangeTopic = "access" | "catalog"

/**
 * Change hints for the caches of stored data (docs/decisions.md, "A lean submit"). Each topic
 * has a generation that moves when a change is heard: at once for this process's own writes,
 * within about a second for another process's where the store can signal them (PostgreSQL's
 * LISTEN/NOTIFY). A hint can be lost (a dropped connection), so a cached entry is trusted for
 * at most `maxAgeMs` whatever the generation says; without a signal across processes that is
 * the whole bound, and short.
 */
export class StoreChanges extends Context.Service<StoreChanges, {
  /** The topic's generation now: a cache entry made at another one is stale. */
  readonly generation: (topic: ChangeTopic) => number
  /** This process changed the topic's data (after the commit): its caches drop it at once. */
  readonly changed: (topic: ChangeTopic) => Effect.Effect<void>
  /** How long a cached entry may be trusted without a re-read, even when no change was heard. */
  readonly maxAgeMs: number
}>()("genjobs/StoreChanges") {}

/** Generations kept in this process; `changed` moves one, and so does the store's signal through the same call. */
export const makeStoreChanges = (maxAgeMs: number): StoreChanges["Service"] => {
  const generations: Record<ChangeTopic, number> = { access: 0, catalog: 0 }
  return {
    generation: (topic) => generations[topic],
    changed: (topic) => Effect.sync(() => void generations[topic]++),
    maxAgeMs
  }
}
