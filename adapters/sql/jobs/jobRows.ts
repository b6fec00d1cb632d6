import { Effect, Option, Schema } from "effect"
import type { Job } from "../../../src/domain/job.js"
import type { JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import { forUpdateOf, type JobSql } from "../queue/context.js"
import { JobRow, storeErrors, toJob } from "../rows.js"

const decodeJobs = Schema.decodeUnknown(Schema.Array(JobRow))

export const jsonOrNull = (value: unknown) => (value === null ? null : JSON.stringify(value))

export const firstJob = (rows: ReadonlyArray<unknown>) =>
  decodeJobs(rows).pipe(Effect.map((jobs) => Option.map(Option.fromNullable(jobs[0]), toJob)))

export const allJobs = (rows: ReadonlyArray<unknown>) => decodeJobs(rows).pipe(Effect.map((jobs) => jobs.map(toJob)))

/** A job as its row's columns. */
export const jobRow = (job: Job) => ({
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
  error: jsonOrNull(job.error),
  outputs: jsonOrNull(job.outputs),
  created_at: job.createdAt,
  estimated_completion_at: job.estimatedCompletionAt,
  started_at: job.startedAt,
  completed_at: job.completedAt,
  attempts: job.attempts,
  lease_owner: job.leaseOwner,
  lease_expires_at: job.leaseExpiresAt,
  provider_phase: job.providerPhase,
  provider_handle: jsonOrNull(job.providerHandle),
  provider_starts: job.providerStarts,
  provider_route: jsonOrNull(job.providerRoute)
})

/** Reading, locking, updating and listing one account's jobs. */
export const makeJobRowStatements = ({ sql, t }: JobSql) => {
  const forUpdate = forUpdateOf(sql)

  const getJob: JobStoreDriver["getJob"] = (id) =>
    sql`SELECT * FROM ${t.jobs} WHERE id = ${id}`.pipe(Effect.flatMap(firstJob), storeErrors("read job"))

  const lockJob: JobStoreDriver["lockJob"] = (id) =>
    sql`SELECT * FROM ${t.jobs} WHERE id = ${id} ${forUpdate}`.pipe(Effect.flatMap(firstJob), storeErrors("lock job"))

  const updateJob: JobStoreDriver["updateJob"] = (next, expected) =>
    sql`UPDATE ${t.jobs} SET
        status = ${next.status},
        error = ${jsonOrNull(next.error)},
        outputs = ${jsonOrNull(next.outputs)},
        started_at = ${next.startedAt},
        completed_at = ${next.completedAt},
        attempts = ${next.attempts},
        lease_owner = ${next.leaseOwner},
        lease_expires_at = ${next.leaseExpiresAt},
        provider_phase = ${next.providerPhase},
        provider_handle = ${jsonOrNull(next.providerHandle)},
        provider_starts = ${next.providerStarts},
        provider_route = ${jsonOrNull(next.providerRoute)}
      WHERE id = ${next.id} AND status = ${expected.status} AND attempts = ${expected.attempts} RETURNING id`.pipe(
      Effect.map((rows) => rows.length > 0),
      storeErrors("update job")
    )

  const listJobs: JobStoreDriver["listJobs"] = ({ accountId, after, limit, model, status }) =>
    sql`SELECT * FROM ${t.jobs} WHERE ${
      sql.and([
        sql`account_id = ${accountId}`,
        ...(status === undefined ? [] : [sql`status = ${status}`]),
        ...(model === undefined ? [] : [sql`model = ${model}`]),
        ...(after === undefined
          ? []
          : [sql`(created_at < ${after.createdAt} OR (created_at = ${after.createdAt} AND id < ${after.id}))`])
      ])
    } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(Effect.flatMap(allJobs), storeErrors("list jobs"))

  return { getJob, lockJob, updateJob, listJobs }
}
