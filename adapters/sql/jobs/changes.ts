import type { Statement } from "effect/sql"
import type { JobSql } from "../queue/context.js"
import { statusFilter } from "../queue/statusFilter.js"

/**
 * `INSERT INTO job_changes ... SELECT` of the changes feed's entries of the job rows `ended`
 * names (the jobs table, or a CTE of the rows an UPDATE just wrote): src/domain/change.ts
 * `changeOf` in SQL, so an ending writes its entry in its own statement and adds no round trip.
 * Rows that have not ended are skipped, as `changeOf` answers undefined for them; `endedAt` is
 * `completed_at`, or `now` when unset; the error column is the one the ending wrote, so its JSON
 * text is the entry's. The position is the columns' defaults: PostgreSQL's transaction id and
 * identity, SQLite's rowid (SqlChanges reads them). test/conformance/changeEntries.test.ts holds
 * this and `changeOf` equal.
 *
 * On SQLite `ended` is the jobs table itself, read back by id after the UPDATE, and the status
 * only filters the rows found (statusFilter.ts): written plainly, SQLite without statistics read
 * every ended job of the table through the status index for each ending, checking each against
 * the ids (a drain beside 100,000 ended jobs ran at 60 % of its rate beside none, beside 400,000
 * at 18 %). PostgreSQL reads the UPDATE's own rows, which no index serves, and its text stays as
 * it was.
 */
export const changeInsertFrom = (
  { sql, t }: JobSql,
  ended: Statement.Identifier,
  where: Statement.Fragment,
  now: number | undefined
) => {
  const status: Statement.Fragment = sql.onDialectOrElse({ pg: () => sql`e.status`, orElse: () => statusFilter(sql, sql`e.status`) })
  return sql`INSERT INTO ${t.job_changes} (account_id, job_id, request_id, status, model, version, ended_at,
      cost_micro_cents, refunded_micro_cents, error)
    SELECT e.account_id, e.id, e.request_id, e.status, e.model, e.version,
      ${now === undefined ? sql`e.completed_at` : sql`COALESCE(e.completed_at, ${now})`}, e.cost_micro_cents,
      CASE WHEN e.status = 'completed' THEN 0 ELSE e.cost_micro_cents END, e.error
    FROM ${ended} AS e WHERE ${status} IN ('completed', 'failed', 'cancelled') AND ${where}`
}
