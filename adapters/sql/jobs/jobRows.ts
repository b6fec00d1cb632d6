import { Effect, Option, Schema, Struct } from "effect"
import type { Statement } from "effect/sql"
import { isTerminal, type Job } from "../../../src/domain/job.js"
import type { JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import { forUpdateOf, type JobSql } from "../queue/context.js"
import { olderThan } from "../cursorFragments.js"
import { changeInsertFrom } from "./changes.js"
import { decodeRows, jobColumnNames, type JobColumns, JobFields, JobFromRow, storeErrors } from "../rows.js"

const decodeJobs = decodeRows(Schema.Array(JobFromRow))

export const firstJob = (rows: ReadonlyArray<unknown>) =>
  decodeJobs(rows).pipe(Effect.map((jobs) => Option.fromNullishOr(jobs[0])))

export const allJobs = (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<Job>, Schema.SchemaError> =>
  decodeJobs(rows)

/** A job as its row's columns. */
export const jobRow: (job: Job) => JobColumns = Schema.encodeSync(JobFromRow)

/** The columns a submit sets once: an update leaves them as they are. */
const JobChanges = JobFields.mapFields(Struct.omit([
  "id",
  "accountId",
  "apiKeyId",
  "requestId",
  "model",
  "version",
  "input",
  "webhookUrl",
  "costMicroCents",
  "createdAt",
  "estimatedCompletionAt"
])).pipe(Schema.encodeKeys(jobColumnNames))
const changedColumns = Schema.encodeEffect(JobChanges)

/** Reading, locking, updating and listing one account's jobs. */
export const makeJobRowStatements = (ctx: JobSql) => {
  const { sql, t } = ctx
  const forUpdate = forUpdateOf(sql)

  const getJob: JobStoreDriver["getJob"] = (id) =>
    sql`SELECT * FROM ${t.jobs} WHERE id = ${id}`.pipe(Effect.flatMap(firstJob), storeErrors("read job"))

  const getJobs: JobStoreDriver["getJobs"] = (ids) =>
    ids.length === 0
      ? Effect.succeed([])
      : sql`SELECT * FROM ${t.jobs} WHERE id IN ${sql.in(ids)}`.pipe(Effect.flatMap(allJobs), storeErrors("read jobs"))

  const lockJob: JobStoreDriver["lockJob"] = (id) =>
    sql`SELECT * FROM ${t.jobs} WHERE id = ${id} ${forUpdate}`.pipe(Effect.flatMap(firstJob), storeErrors("lock job"))

  /**
   * An ending writes its changes feed entry with it: on PostgreSQL in the UPDATE's statement (a
   * CTE inserting from its RETURNING row), on SQLite in an INSERT after it (no round trip there).
   */
  const updateEnding = sql.onDialectOrElse({
    pg: () => (update: Statement.Fragment, now: number, _id: string) =>
      sql`WITH ended AS (${update} RETURNING *), entries AS (${changeInsertFrom(ctx, sql("ended"), sql`TRUE`, now)})
        SELECT id FROM ended`,
    orElse: () => (update: Statement.Fragment, now: number, id: string) =>
      sql`${update} RETURNING id`.pipe(Effect.tap((rows) =>
        rows.length === 0 ? Effect.void : changeInsertFrom(ctx, t.jobs, sql`e.id = ${id}`, now)
      ))
  })

  const updateJob: JobStoreDriver["updateJob"] = (next, expected, now) =>
    changedColumns(next).pipe(
      Effect.flatMap((columns) => {
        const update = sql`UPDATE ${t.jobs} SET ${sql.update(columns)}
          WHERE id = ${next.id} AND status = ${expected.status} AND attempts = ${expected.attempts}`
        return isTerminal(next.status) ? updateEnding(update, now, next.id) : sql`${update} RETURNING id`
      }),
      Effect.map((rows) => rows.length > 0),
      storeErrors("update job")
    )

  const listJobs: JobStoreDriver["listJobs"] = ({ accountId, after, limit, model, status }) =>
    sql`SELECT * FROM ${t.jobs} WHERE ${
      sql.and([
        sql`account_id = ${accountId}`,
        ...(status === undefined ? [] : [sql`status = ${status}`]),
        ...(model === undefined ? [] : [sql`model = ${model}`]),
        ...olderThan(sql, after)
      ])
    } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(Effect.flatMap(allJobs), storeErrors("list jobs"))

  return { getJob, getJobs, lockJob, updateJob, listJobs }
}
