import { Context } from "effect"
import type { PoolUse } from "../../src/ports/StoreStats.js"

/**
 * The pool's counters, read from the pool the store's client runs on (pgPool.ts). In a file of
 * its own, without the driver: the shared store stats read it, and the SQLite store must not
 * load @effect/sql-pg.
 */
export class PgPoolUse extends Context.Service<PgPoolUse, () => PoolUse>()("genjobs/PgPoolUse") {}
