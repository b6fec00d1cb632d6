import { Effect, Option, Schema, Struct } from "effect"
import type { Statement } from "effect/sql"
import { isTerminal, type Job } from "../../../src/domain/job.js"
import type { JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import { forUpdateOf, type JobSql } from "../queue/context.js"
import { olderThan } from "../cursorFragments.js"
import { changeInsertFrom } from "./changes.js"
import { decodeRows, jobColumnNames, type JobColumns, JobFields, JobFromRow, plainJobOfRow, storeErrors } from "../rows.js"

const decodeJobs = decodeRows(Schema.Array(JobFromRow))

/** Rows that are all plain (plainJobOfRow) read by hand, any other list through JobFromRow. */
const plainJobs = (rows: ReadonlyArray<unknown>): ReadonlyArray<Job> | undefined => {
  const jobs: Array<Job> = []
  for (const row of rows) {
    const job = plainJobOfRow(row)
    if (job === undefined) return undefined
    jobs.push(job)
  }
  return jobs
}

export const allJobs = (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<Job>, Schema.SchemaError> =>
  Effect.suspend(() => {
    const jobs = plainJobs(rows)
    return jobs === undefined ? decodeJobs(rows) : Effect.succeed(jobs)
  })

export const firstJob = (rows: ReadonlyArray<unknown>) => allJobs(rows).pipe(Effect.map((jobs) => Option.fromNullishOr(jobs[0])))

const encodeJobRow: (job: Job) => JobColumns = Schema.encodeSync(JobFromRow)

const isIntOrNull = (value: number | null) => value === null || Number.isSafeInteger(value)

/**
 * A job as its row's columns. A job as a submit makes it (no error, outputs, provider state or
 * log yet, every number a safe integer) is written out by hand: the Schema's encode was about
 * 20 µs of each submit, most of its statement's build (docs/benchmarks.md, "The submit's
 * statement"). Any other job, and any value the hand-written row would not check, goes through
 * JobFromRow, the row's one definition; a test holds the two equal.
 */
export const jobRow = (job: Job): JobColumns =>
  job.error === null && job.outputs === null && job.providerHandle === null && job.providerRoute === null &&
    job.providerLog === undefined && Number.isSafeInteger(job.costMicroCents) && Number.isSafeInteger(job.createdAt) &&
    Number.isSafeInteger(job.estimatedCompletionAt) && isIntOrNull(job.startedAt) && isIntOrNull(job.completedAt) &&
    Number.isSafeInteger(job.attempts) && isIntOrNull(job.leaseExpiresAt) && Number.isSafeInteger(job.providerStarts) &&
    Number.isSafeInteger(job.fairKey) && isIntOrNull(job.providerProgress ?? null)
    ? {
      id: job.id,
      account_id: job.accountId,
      api_key_id: job.apiKeyId ?? null,
      request_id: job.requestId,
      model: job.model,
      version: job.version,
      input: JSON.stringify(job.input),
      webhook_url: job.webhookUrl,
      status: job.status,
      cost_micro_cents: job.costMicroCents,
      error: null,
      outputs: null,
      created_at: job.createdAt,
      estimated_completion_at: job.estimatedCompletionAt,
      started_at: job.startedAt,
      completed_at: job.completedAt,
      attempts: job.attempts,
      lease_owner: job.leaseOwner,
      lease_expires_at: job.leaseExpiresAt,
      provider_phase: job.providerPhase,
      provider_handle: null,
      provider_starts: job.providerStarts,
      provider_route: null,
      fair_key: job.fairKey,
      provider_progress: job.providerProgress ?? null,
      provider_log: null
    }
    : encodeJobRow(job)

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
