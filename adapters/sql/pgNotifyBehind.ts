import { Context, type Effect } from "effect"
import type { SqlClient } from "effect/sql"

/**
 * A NOTIFY written on the store's pooled session right behind a statement (pgPool.ts), so that
 * listeners hear it as soon as the statement has committed, without a round trip after its
 * answer. The two go in one write, each in a transaction of its own: the NOTIFY is not in the
 * statement's transaction, which would hold PostgreSQL's cluster-wide notify lock through that
 * commit's WAL flush (docs/decisions.md, "NOTIFY after the submit").
 *
 * In a file of its own, without the driver: the job driver (SqlJobs.ts) reads it, and the
 * SQLite store must not load @effect/sql-pg.
 */
export class PgNotifyBehind extends Context.Service<PgNotifyBehind, {
  /**
   * A client over the store's pool whose statements, outside a transaction, carry
   * `SELECT pg_notify(channel, payload)` behind them on their session: one such NOTIFY at a
   * time, so a statement made while one is on its way carries none.
   */
  readonly client: (channel: string, payload: string) => Effect.Effect<SqlClient.SqlClient>
  /**
   * Whether the calling fiber's last statement through such a client carried its NOTIFY, read
   * once: the mark is cleared. Synchronous, so call it inside an effect of the fiber.
   */
  readonly carried: () => boolean
  /** Clears the calling fiber's mark (a statement that stored nothing, or a write made without one). */
  readonly forget: () => void
}>()("genjobs/PgNotifyBehind") {}
