import { Context, type Effect } from "effect"
import type { StoreError } from "../domain/errors.js"

/** How busy a connection pool is, where the driver tells. */
export interface PoolUse {
  /** Connections open, idle or in use. */
  readonly total: number
  readonly idle: number
  /** Queries waiting for a connection. */
  readonly waiting: number
}

/**
 * Figures a store can read cheaply, for metrics scraped every few seconds. Optional: a store
 * without it leaves its metrics out of /metrics.
 */
export class StoreStats extends Context.Service<StoreStats, {
  /** Jobs waiting for a worker, across every process sharing the store. */
  readonly pendingJobs: Effect.Effect<number, StoreError>
  /** The pool's use now; undefined where the store has no pool to speak of (SQLite's one connection). */
  readonly pool: Effect.Effect<PoolUse | undefined>
}>()("genjobs/StoreStats") {}
