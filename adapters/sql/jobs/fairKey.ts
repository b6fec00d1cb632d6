import type { Statement } from "effect/sql"
import type { Job } from "../../../src/domain/job.js"
import { DEFAULT_FAIR_WEIGHT, FAIR_STEP_UNIT } from "../../../src/domain/fairShare.js"
import { makeClaimFragments } from "../queue/claims.js"
import type { JobSql } from "../queue/context.js"
import type { JobColumns } from "../rows.js"
import { jobRow } from "./jobRows.js"

/**
 * fairKeyOf (src/domain/fairShare.ts) in SQL, evaluated by the insert itself so a submit stays
 * one statement: the account's last pending key plus its step, else the first pending key of
 * all, else 0. Each side is one seek of a partial index of pending jobs, jobs_pending_account
 * (account_id, fair_key) and jobs_pending (fair_key, id). The account's last key is itself
 * pending, so never below the first: fairKeyOf's max is already met. Two submits of one account
 * that commit in parallel may read the same last key and get equal keys; the id breaks the tie.
 * `weight`: the account's fair_weight where the statement already has the account's row (the
 * charge's), else a seek of accounts. `accountId` is a value, or a column of a multi-row insert's
 * rows (the batched submits', submit.ts). The account id is CAST: compared bare with the indexed
 * column, SQLite (STAT4) may plan by the bound value, and re-prepared the submit's statement on
 * every run (sqlite3Reprepare, 164-167 µs of the charge's UPDATE against 30-39 with the CAST);
 * PostgreSQL's plan is the same either way.
 */
export const makeFairKeys = (ctx: JobSql) => {
  const { sql, t } = ctx
  // SQLite reads the first pending key of all through jobs_pending by name (claims.ts, pendingJobs):
  // planned without statistics, it sorted every pending job for a submit whose account had none.
  const { pendingJobs } = makeClaimFragments(ctx)
  const fairKey = (
    accountId: string | Statement.Fragment,
    weight: Statement.Fragment = sql`COALESCE((SELECT fair_weight FROM ${t.accounts} WHERE id = ${accountId}), ${
      sql.literal(String(DEFAULT_FAIR_WEIGHT))
    })`
  ) =>
    sql`COALESCE(
      (SELECT fair_key FROM ${t.jobs} WHERE status = 'pending' AND account_id = CAST(${accountId} AS TEXT) ORDER BY fair_key DESC LIMIT 1)
        + ${sql.literal(String(FAIR_STEP_UNIT))} / ${weight},
      (SELECT fair_key FROM ${pendingJobs} WHERE status = 'pending' ORDER BY fair_key LIMIT 1),
      0)`

  /** The columns of a job's row, for `INSERT INTO jobs (columns) ...`. */
  const columnsOf = (job: Job) => sql.literal(Object.keys(jobRow(job)).join(", "))

  /** The values of `job`'s row in column order, fair_key computed (and any column `replaced` given). */
  const valuesOf = (job: Job, replaced: Readonly<Record<string, Statement.Fragment>> = {}) =>
    sql.csv(Object.entries(jobRow(job)).map(([column, value]) =>
      replaced[column] ?? (column === "fair_key" ? fairKey(job.accountId) : sql`${value}`)
    ))

  /** columnsOf and valuesOf of a job's row (jobRow), any column `replaced` given; only places the row's values (compiledOnce.ts). */
  const rowOf = (row: JobColumns, replaced: Readonly<Record<string, Statement.Fragment>>) => {
    const entries = Object.entries(row)
    return {
      columns: sql.literal(entries.map(([column]) => column).join(", ")),
      values: sql.csv(entries.map(([column, value]) => replaced[column] ?? sql`${value}`))
    }
  }

  return { fairKey, columnsOf, valuesOf, rowOf }
}
