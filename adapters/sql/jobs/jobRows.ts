import { Effect, Option, Schema, Struct } from "effect"
import type { Job } from "../../../src/domain/job.js"
import type { JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import { forUpdateOf, type JobSql } from "../queue/context.js"
import { olderThan } from "../cursorFragments.js"
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
export const makeJobRowStatements = ({ sql, t }: JobSql) => {
  const forUpdate = forUpdateOf(sql)

  const getJob: JobStoreDriver["getJob"] = (id) =>
    sql`SELECT * FROM ${t.jobs} WHERE id = ${id}`.pipe(Effect.flatMap(firstJob), storeErrors("read job"))

  const getJobs: JobStoreDriver["getJobs"] = (ids) =>
    ids.length === 0
      ? Effect.succeed([])
      : sql`SELECT * FROM ${t.jobs} WHERE id IN ${sql.in(ids)}`.pipe(Effect.flatMap(allJobs), storeErrors("read jobs"))

  const lockJob: JobStoreDriver["lockJob"] = (id) =>
    sql`SELECT * FROM ${t.jobs} WHERE id = ${id} ${forUpdate}`.pipe(Effect.flatMap(firstJob), storeErrors("lock job"))

  const updateJob: JobStoreDriver["updateJob"] = (next, expected) =>
    changedColumns(next).pipe(
      Effect.flatMap((columns) =>
        sql`UPDATE ${t.jobs} SET ${sql.update(columns)}
          WHERE id = ${next.id} AND status = ${expected.status} AND attempts = ${expected.attempts} RETURNING id`
      ),
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
