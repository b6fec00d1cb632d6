import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { JobId } from "../../src/domain/ids.js"
import { ProviderLogMark } from "../../src/domain/providerLogs.js"
import { JobLogRepo, type ProviderReport } from "../../src/ports/JobLogRepo.js"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeIds = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String })))
const decodeLines = decodeRows(Schema.Array(Schema.Struct({ seq: DbInt, at: DbInt, line: Schema.String })))
const encodeMark = Schema.encodeSync(Schema.fromJsonString(ProviderLogMark))

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
 * insert of the jobs it updated); SQLite, a local call per statement, in one transaction.
 */
export const makeSqlJobLogs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables


  const record = sql.onDialectOrElse({
    pg: () => (reports: ReadonlyArray<ProviderReport>) =>
      sql`WITH written AS (
          UPDATE ${t.jobs} AS j SET provider_progress = CASE
              WHEN d.progress IS NULL THEN j.provider_progress
              WHEN j.provider_progress IS NULL OR j.provider_progress < d.progress THEN d.progress
              ELSE j.provider_progress END,
            provider_log = COALESCE(d.mark, j.provider_log)
          FROM jsonb_to_recordset(${JSON.stringify(reports.map(reportRow))}::jsonb)
            AS d(id text, "leaseOwner" text, progress integer, mark text)
          WHERE j.id = d.id AND j.status = 'processing' AND j.lease_owner = d."leaseOwner"
          RETURNING j.id
        ), lines AS (
          INSERT INTO ${t.job_logs} (job_id, seq, at, line)
          SELECT l.job_id, l.seq, l.at, l.line
          FROM jsonb_to_recordset(${JSON.stringify(lineRows(reports))}::jsonb) AS l(job_id text, seq integer, at bigint, line text)
          WHERE l.job_id IN (SELECT id FROM written)
          ON CONFLICT (job_id, seq) DO NOTHING
        )
        SELECT id FROM written`,
    orElse: () => (reports: ReadonlyArray<ProviderReport>) =>
      sql.withTransaction(Effect.map(
        Effect.forEach(reports, (report) =>
          Effect.gen(function*() {
            const row = reportRow(report)
            const progress = row.progress
            const written = yield* sql`UPDATE ${t.jobs} SET provider_progress = CASE
                  WHEN ${progress} IS NULL THEN provider_progress
                  WHEN provider_progress IS NULL OR provider_progress < ${progress} THEN ${progress}
                  ELSE provider_progress END,
                provider_log = COALESCE(${row.mark}, provider_log)
                WHERE id = ${row.id} AND status = 'processing' AND lease_owner = ${row.leaseOwner} RETURNING id`
            const [first, ...rest] = lineRows([report])
            if (written.length > 0 && first !== undefined) {
              yield* sql`INSERT INTO ${t.job_logs} ${sql.insert([first, ...rest])} ON CONFLICT (job_id, seq) DO NOTHING`
            }
            return written
          })),
        (rows) => rows.flat()
      ))
  })

  return JobLogRepo.of({
    record: (reports) =>
      reports.length === 0
        ? Effect.succeed([])
        : record(reports).pipe(
          Effect.flatMap(decodeIds),
          Effect.map((rows) => rows.map((row) => row.id as JobId)),
          storeErrors("record provider progress and logs")
        ),
    lines: (jobId, after, limit) =>
      sql`SELECT seq, at, line FROM ${t.job_logs} WHERE job_id = ${jobId} AND seq > ${after}
          ORDER BY seq LIMIT ${limit + 1}`.pipe(Effect.flatMap(decodeLines), storeErrors("read provider log lines"))
  })
})
