import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { JobId } from "../../src/domain/ids.js"
import { ProviderLogMark } from "../../src/domain/providerLogs.js"
import { JobLogRepo, type ProviderReport } from "../../src/ports/JobLogRepo.js"
import { byId, heldInPg } from "./queue/lockOrder.js"
import { statusFilter } from "./queue/statusFilter.js"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeIds = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String })))
const decodeLines = decodeRows(Schema.Array(Schema.Struct({ seq: DbInt, at: DbInt, line: Schema.String })))
const encodeMark = Schema.encodeSync(Schema.fromJsonString(ProviderLogMark))

/** The rows a SQLite write changed, from node:sqlite's run result (the client's `raw`). */
const changesOf = (result: unknown): number => Number((result as { readonly changes?: number | bigint }).changes ?? -1)

const reportRow = ({ id, leaseOwner, log, progress }: ProviderReport) => ({
  id,
  leaseOwner,
  progress: progress ?? null,
  mark: log === undefined ? null : encodeMark(log.mark)
})

const lineRows = (reports: ReadonlyArray<ProviderReport>) =>
  reports.flatMap(({ id, log }) => (log?.lines ?? []).map(({ at, line, seq }) => ({ job_id: id, seq, at, line })))

/**
 * Provider progress and log lines over SQLite or PostgreSQL (migration 0018). The progress is
 * raised in the statement itself, so no report lowers it, whatever order reports commit in.
 * PostgreSQL writes every report of a batch in one statement (the jobs' update and the lines'
 * insert of the jobs it updated); SQLite in two (the update, then the lines), in one transaction.
 */
export const makeSqlJobLogs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables

  const record = sql.onDialectOrElse({
    // The reports go by id and their jobs are found by primary key: the update locks its rows in
    // the list's order, as the lease renewals, provider states and endings do theirs, so none of
    // them deadlock with another (queue/lockOrder.ts).
    pg: () => (reports: ReadonlyArray<ProviderReport>) =>
      sql`WITH d AS (
          SELECT * FROM jsonb_to_recordset(${JSON.stringify(byId(reports).map(reportRow))}::jsonb)
            AS d(id text, "leaseOwner" text, progress integer, mark text)
        ), written AS (
          UPDATE ${t.jobs} AS j SET provider_progress = CASE
              WHEN d.progress IS NULL THEN j.provider_progress
              WHEN j.provider_progress IS NULL OR j.provider_progress < d.progress THEN d.progress
              ELSE j.provider_progress END,
            provider_log = COALESCE(d.mark, j.provider_log)
          FROM d WHERE ${heldInPg(sql, "d")} AND j.lease_owner = d."leaseOwner"
          RETURNING j.id
        ), lines AS (
          INSERT INTO ${t.job_logs} (job_id, seq, at, line)
          SELECT l.job_id, l.seq, l.at, l.line
          FROM jsonb_to_recordset(${JSON.stringify(lineRows(reports))}::jsonb) AS l(job_id text, seq integer, at bigint, line text)
          WHERE l.job_id IN (SELECT id FROM written)
          ON CONFLICT (job_id, seq) DO NOTHING
        )
        SELECT id FROM written`.pipe(Effect.flatMap(decodeIds), Effect.map((rows) => rows.map((row) => row.id as JobId))),
    // SQLite: two statements in one transaction, whatever the batch's size (a statement per
    // report cost each its build, compile and span through the client: at 10,000 generations in
    // flight most of the worker's garbage beside the polls). The jobs are found by id from the
    // batch's rows (`statusFilter`: the status a filter, not the index read), then the lines of
    // the jobs written are inserted. The update returns no rows: node:sqlite builds each row as
    // an object of its own, and at 10,000 in flight all of them were found in V8's old generation
    // (allocation samples: 13-25 % of what the hold promoted), garbage that grows the heap until
    // a major GC. Its count of changed rows says whether every report was written, as all are but
    // those whose lease moved on; only when it falls short does a SELECT find which were (a job
    // twice in one batch also takes that path, and gets the same answer).
    orElse: () => (reports: ReadonlyArray<ProviderReport>) =>
      sql.withTransaction(Effect.gen(function*() {
        const batch = JSON.stringify(reports.map(reportRow))
        const status = statusFilter(sql, sql`${t.jobs}.status`)
        const update = yield* sql`UPDATE ${t.jobs} SET provider_progress = CASE
              WHEN d.progress IS NULL THEN provider_progress
              WHEN provider_progress IS NULL OR provider_progress < d.progress THEN d.progress
              ELSE provider_progress END,
            provider_log = COALESCE(d.mark, provider_log)
          FROM (SELECT value ->> 'id' AS id, value ->> 'leaseOwner' AS lease_owner, value ->> 'progress' AS progress,
              value ->> 'mark' AS mark FROM json_each(${batch})) AS d
          WHERE ${t.jobs}.id = d.id AND ${status} = 'processing' AND ${t.jobs}.lease_owner = d.lease_owner`.raw
        // A batch holds one report per job (one on its way per generation), so each changed row is one written.
        const found = changesOf(update) === reports.length ? undefined : yield* Effect.map(
          Effect.flatMap(
            sql`SELECT ${t.jobs}.id FROM ${t.jobs}
              JOIN (SELECT value ->> 'id' AS id, value ->> 'leaseOwner' AS lease_owner FROM json_each(${batch})) AS d
              ON ${t.jobs}.id = d.id AND ${status} = 'processing' AND ${t.jobs}.lease_owner = d.lease_owner`,
            decodeIds
          ),
          (rows) => new Set(rows.map((row) => row.id as JobId))
        )
        const written = found === undefined ? reports : reports.filter((report) => found.has(report.id))
        const lines = lineRows(written)
        if (lines.length > 0) {
          // `WHERE true`: SQLite reads an ON CONFLICT right after a bare SELECT's FROM as a join's.
          yield* sql`INSERT INTO ${t.job_logs} (job_id, seq, at, line)
            SELECT value ->> 'job_id', value ->> 'seq', value ->> 'at', value ->> 'line' FROM json_each(${JSON.stringify(lines)}) WHERE true
            ON CONFLICT (job_id, seq) DO NOTHING`
        }
        return found === undefined ? reports.map((report) => report.id) : [...found]
      }))
  })

  return JobLogRepo.of({
    record: (reports) =>
      reports.length === 0
        ? Effect.succeed([])
        : record(reports).pipe(storeErrors("record provider progress and logs")),
    lines: (jobId, after, limit) =>
      sql`SELECT seq, at, line FROM ${t.job_logs} WHERE job_id = ${jobId} AND seq > ${after}
          ORDER BY seq LIMIT ${limit + 1}`.pipe(Effect.flatMap(decodeLines), storeErrors("read provider log lines"))
  })
})
