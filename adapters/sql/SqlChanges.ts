import { Cause, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { ChangeEntry, ChangePosition } from "../../src/domain/change.js"
import type { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import { JobError } from "../../src/domain/job.js"
import { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

/**
 * A read's rows: the settled position's column on every row (the only one when the read found
 * no entry, its entry columns then NULL), beside each entry's.
 */
const ReadRow = Schema.Struct({
  settled: DbInt,
  seq: Schema.NullOr(DbInt),
  txn: Schema.NullOr(DbInt),
  account_id: Schema.NullOr(Schema.String),
  job_id: Schema.NullOr(Schema.String),
  request_id: Schema.NullOr(Schema.String),
  status: Schema.NullOr(Schema.Literals(["completed", "failed", "cancelled"])),
  model: Schema.NullOr(Schema.String),
  version: Schema.NullOr(Schema.String),
  ended_at: Schema.NullOr(DbInt),
  cost_micro_cents: Schema.NullOr(DbInt),
  refunded_micro_cents: Schema.NullOr(DbInt),
  error: Schema.NullOr(Schema.fromJsonString(JobError))
})
const decodeReadRows = decodeRows(Schema.Array(ReadRow))

const entryOf = (row: typeof ReadRow.Type): ReadonlyArray<ChangeEntry> =>
  row.seq === null ? [] : [{
    position: { txn: row.txn ?? 0, seq: row.seq },
    accountId: row.account_id as AccountId,
    jobId: row.job_id as JobId,
    requestId: row.request_id as RequestId,
    status: row.status!,
    model: row.model!,
    version: row.version!,
    endedAt: row.ended_at!,
    costMicroCents: row.cost_micro_cents!,
    refundedMicroCents: row.refunded_micro_cents!,
    error: row.error
  }]

const byPosition = (a: ChangeEntry, b: ChangeEntry) => a.position.txn - b.position.txn || a.position.seq - b.position.seq

/**
 * The changes feed over SQLite or PostgreSQL (migration 0019). Each read is one statement, so
 * its entries and its settled position come from one snapshot.
 *
 * PostgreSQL: only rows whose transaction id is below the snapshot's xmin are read. Every
 * transaction below xmin has ended (committed, its rows visible to this snapshot, or rolled
 * back), and any transaction id drawn later is at least xmin: no row can ever appear at or
 * before (xmin, 0) after this read, which is the settled position answered. A transaction still
 * running holds the feed back (not just its own rows) until it ends; it never makes a row skipped.
 *
 * SQLite: its one writer draws seq in commit order, so every committed row is served, and the
 * settled position is the newest seq.
 */
export const makeSqlChangeFeed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  // SQLite's txid is always 0: its order is seq alone, a range of its primary key or index.
  const compared = (operator: ">" | "<=", position: ChangePosition) =>
    isPg
      ? sql`(txid, seq) ${sql.literal(operator)} (${String(position.txn)}::xid8, ${position.seq})`
      : sql`seq ${sql.literal(operator)} ${position.seq}`
  const columns = sql.literal(
    "seq, account_id, job_id, request_id, status, model, version, ended_at, cost_micro_cents, refunded_micro_cents, error"
  )

  const read = ChangeFeed.of({
    read: ({ accountId, after, limit, upTo }) => {
      // Integers only, written into the statement so either planner knows the page is small.
      if (!Number.isSafeInteger(limit) || limit < 0) {
        return Effect.die(new Cause.IllegalArgumentError(`A changes read needs a whole limit of 0 or more, not ${limit}`))
      }
      const where = [
        ...(accountId === undefined ? [] : [sql`account_id = ${accountId}`]),
        compared(">", after),
        ...(upTo === undefined ? [] : [compared("<=", upTo)])
      ]
      const statement = isPg
        ? sql`SELECT h.settled::text AS settled, c.* FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS settled) h
            LEFT JOIN LATERAL (
              SELECT ${columns}, txid::text AS txn FROM ${t.job_changes}
              WHERE ${sql.and(where)} AND txid < h.settled
              ORDER BY txid, seq LIMIT ${sql.literal(String(limit))}
            ) c ON true`
        : sql`SELECT h.settled AS settled, c.* FROM (SELECT COALESCE(MAX(seq), 0) AS settled FROM ${t.job_changes}) h
            LEFT JOIN (
              SELECT ${columns}, txid AS txn FROM ${t.job_changes}
              WHERE ${sql.and(where)}
              ORDER BY seq LIMIT ${sql.literal(String(limit))}
            ) c ON 1`
      return statement.pipe(
        Effect.flatMap(decodeReadRows),
        Effect.map((rows) => ({
          entries: rows.flatMap(entryOf).sort(byPosition),
          // PostgreSQL: every row before (xmin, 0) is settled; SQLite: every row up to the newest.
          settled: isPg ? { txn: rows[0]?.settled ?? 0, seq: 0 } : { txn: 0, seq: rows[0]?.settled ?? 0 }
        })),
        storeErrors("read changes")
      )
    },

    purge: (endedBefore, limit) => {
      if (!Number.isSafeInteger(limit) || limit <= 0) {
        return Effect.die(new Cause.IllegalArgumentError(`A changes purge needs a positive whole limit, not ${limit}`))
      }
      const n = sql.literal(String(limit))
      // SQLite keeps its newest row, so its next rowid is never one a cursor has passed.
      return (isPg
        ? sql`DELETE FROM ${t.job_changes} WHERE (txid, seq) IN (
            SELECT txid, seq FROM ${t.job_changes} ORDER BY txid, seq LIMIT ${n}
          ) AND ended_at < ${endedBefore} RETURNING seq`
        : sql`DELETE FROM ${t.job_changes} WHERE seq IN (
            SELECT seq FROM ${t.job_changes} ORDER BY seq LIMIT ${n}
          ) AND ended_at < ${endedBefore} AND seq < (SELECT MAX(seq) FROM ${t.job_changes}) RETURNING seq`).pipe(
          Effect.map((rows) => rows.length),
          storeErrors("purge changes")
        )
    }
  })
  return read
})
