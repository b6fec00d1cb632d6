import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type AuditEntry, RecordedAuditAction } from "../../src/domain/audit.js"
import type { AuditLog } from "../../src/ports/AuditLog.js"
import { olderThan } from "./cursorFragments.js"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

const AuditRow = Schema.Struct({
  id: Schema.String,
  actor: Schema.String,
  action: RecordedAuditAction,
  target: Schema.String,
  summary: Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)),
  request_id: Schema.NullOr(Schema.String),
  created_at: DbInt
})
const decodeAuditRows = decodeRows(Schema.Array(AuditRow))

const toEntry = (row: typeof AuditRow.Type): AuditEntry => ({
  id: row.id,
  actor: row.actor,
  action: row.action,
  target: row.target,
  summary: row.summary,
  requestId: row.request_id,
  createdAt: row.created_at
})

/** The audit log in its own table, written in the change's transaction. */
export const makeSqlAuditLog = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables

  const insert = (entry: AuditEntry) =>
    sql`INSERT INTO ${t.admin_audit} ${
      sql.insert({
        id: entry.id,
        actor: entry.actor,
        action: entry.action,
        target: entry.target,
        summary: JSON.stringify(entry.summary),
        request_id: entry.requestId,
        created_at: entry.createdAt
      })
    }`

  const log: AuditLog["Service"] = {
    recorded: (change, entry) =>
      sql.withTransaction(Effect.tap(change, (result) => insert(entry(result)))).pipe(storeErrors("record admin action")),
    list: ({ action, actor, after, limit, target }) =>
      sql`SELECT * FROM ${t.admin_audit} WHERE ${
        sql.and([
          ...(actor === undefined ? [] : [sql`actor = ${actor}`]),
          ...(action === undefined ? [] : [sql`action = ${action}`]),
          ...(target === undefined ? [] : [sql`target = ${target}`]),
          ...olderThan(sql, after)
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(
        Effect.flatMap(decodeAuditRows),
        Effect.map((rows) => rows.map(toEntry)),
        storeErrors("read audit log")
      )
  }
  return log
})
