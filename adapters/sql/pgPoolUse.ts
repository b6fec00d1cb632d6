import { Context } from "effect"
import type { PoolUse } from "../../src/ports/StoreStats.js"

/**
 * The pool's counters, read from the `pg` pool the client runs on. In a file of its own, without
 * the driver: the shared store stats read it, and the SQLite store must not load `pg`.
 */
export class PgPoolUse extends Context.Tag("genjobs/PgPoolUse")<PgPoolUse, () => PoolUse>() {}
