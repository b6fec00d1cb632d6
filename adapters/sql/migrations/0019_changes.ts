import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The changes feed (docs/decisions.md, "A changes feed"): one row per job ending,
 * written in the ending's transaction, kept for CHANGES_RETENTION_DAYS.
 *
 * PostgreSQL orders the feed by (txid, seq): `txid` is the writing transaction's id
 * (pg_current_xact_id(), the column's default), `seq` an identity drawn in it. Reads serve only
 * rows whose transaction is older than every transaction still running, so a row that commits
 * later can never land behind one already served. The primary key is that order, and the
 * retention's delete walks it from the old end; the account's index is its page.
 *
 * SQLite has one writer at a time: `seq` (the rowid) is drawn under the write lock and is the
 * commit order; `txid` is 0. Not AUTOINCREMENT (its sqlite_sequence table would carry no
 * prefix): the retention never deletes the newest row, so a seq is never drawn twice.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = sql.literal(`account_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    status TEXT NOT NULL,
    model TEXT NOT NULL,
    version TEXT NOT NULL,
    ended_at BIGINT NOT NULL,
    cost_micro_cents BIGINT NOT NULL,
    refunded_micro_cents BIGINT NOT NULL,
    error TEXT`)
  yield* sql.onDialectOrElse({
    pg: () =>
      sql`CREATE TABLE ${t.job_changes} (
        seq BIGINT GENERATED ALWAYS AS IDENTITY,
        txid XID8 NOT NULL DEFAULT pg_current_xact_id(),
        ${columns},
        PRIMARY KEY (txid, seq)
      )`,
    orElse: () =>
      sql`CREATE TABLE ${t.job_changes} (
        seq INTEGER PRIMARY KEY,
        txid INTEGER NOT NULL DEFAULT 0,
        ${columns}
      )`
  })
  // An account's page is a range of this index from the cursor on (SQLite's order is seq alone).
  yield* sql.onDialectOrElse({
    pg: () => sql`CREATE INDEX ${t.job_changes_account} ON ${t.job_changes} (account_id, txid, seq)`,
    orElse: () => sql`CREATE INDEX ${t.job_changes_account} ON ${t.job_changes} (account_id, seq)`
  })
})
