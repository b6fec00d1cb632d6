import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import type { WindowUsage } from "../../src/domain/rateLimit.js"
import type { IdempotencyRecord, JobStoreDriver } from "../../src/ports/JobStoreDriver.js"
import { postLedger } from "./ledger.js"
import { SqlTables } from "./tables.js"
import { AccountRow, DbInt, JobRow, storeErrors, toAccount, toJob } from "./rows.js"

const decodeJobs = Schema.decodeUnknown(Schema.Array(JobRow))
const decodeAccounts = Schema.decodeUnknown(Schema.Array(AccountRow))
const decodeUsage = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ n: DbInt, oldest: Schema.NullOr(DbInt) }))
)
const decodeIdempotency = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ request_hash: Schema.String, job_id: Schema.String, created_at: DbInt }))
)

const jsonOrNull = (value: unknown) => (value === null ? null : JSON.stringify(value))

const firstJob = (rows: ReadonlyArray<unknown>) =>
  decodeJobs(rows).pipe(Effect.map((jobs) => Option.map(Option.fromNullable(jobs[0]), toJob)))

/** Job storage in SQLite or PostgreSQL, for makeJobRepo. PostgreSQL adds row locks to transactions. */
export const makeSqlJobDriver = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  /** SQLite's single writer already serialises transactions. */
  const forUpdate = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

  const driver: JobStoreDriver = {
    transaction: (effect) => sql.withTransaction(effect).pipe(storeErrors("transaction")),

    lockAccount: (id) =>
      sql`SELECT * FROM ${t.accounts} WHERE id = ${id} ${forUpdate}`.pipe(
        Effect.flatMap(decodeAccounts),
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toAccount)),
        storeErrors("lock account")
      ),

    findIdempotency: (accountId, key) =>
      sql`SELECT request_hash, job_id, created_at FROM ${t.idempotency_keys}
        WHERE account_id = ${accountId} AND idempotency_key = ${key}`.pipe(
        Effect.flatMap(decodeIdempotency),
        Effect.map((rows) =>
          Option.map(Option.fromNullable(rows[0]), (row): IdempotencyRecord => ({
            requestHash: row.request_hash,
            jobId: row.job_id as JobId,
            createdAt: row.created_at
          }))
        ),
        storeErrors("read idempotency key")
      ),

    saveIdempotency: (accountId, key, { createdAt, jobId, requestHash }) =>
      sql`INSERT INTO ${t.idempotency_keys} (account_id, idempotency_key, request_hash, job_id, created_at)
        VALUES (${accountId}, ${key}, ${requestHash}, ${jobId}, ${createdAt})
        ON CONFLICT (account_id, idempotency_key) DO UPDATE SET
          request_hash = ${requestHash}, job_id = ${jobId}, created_at = ${createdAt}`.pipe(
        Effect.asVoid,
        storeErrors("save idempotency key")
      ),

    countJobs: (accountId, statuses) =>
      sql`SELECT COUNT(*) AS n, NULL AS oldest FROM ${t.jobs}
        WHERE account_id = ${accountId} AND status IN ${sql.in(statuses)}`.pipe(
        Effect.flatMap(decodeUsage),
        Effect.map((rows) => rows[0]?.n ?? 0),
        storeErrors("count jobs")
      ),

    windowUsage: (accountId, model, version, since) =>
      sql`SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM ${t.jobs}
        WHERE account_id = ${accountId} AND model = ${model} AND version = ${version} AND created_at > ${since}`.pipe(
        Effect.flatMap(decodeUsage),
        Effect.map((rows): WindowUsage => ({ count: rows[0]?.n ?? 0, oldest: rows[0]?.oldest ?? null })),
        storeErrors("read rate-limit window")
      ),

    insertJob: (job) =>
      sql`INSERT INTO ${t.jobs} ${
        sql.insert({
          id: job.id,
          account_id: job.accountId,
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
          lease_expires_at: job.leaseExpiresAt
        })
      }`.pipe(Effect.asVoid, storeErrors("insert job")),

    getJob: (id) => sql`SELECT * FROM ${t.jobs} WHERE id = ${id}`.pipe(Effect.flatMap(firstJob), storeErrors("read job")),

    lockJob: (id) =>
      sql`SELECT * FROM ${t.jobs} WHERE id = ${id} ${forUpdate}`.pipe(Effect.flatMap(firstJob), storeErrors("lock job")),

    updateJob: (next, expected) =>
      sql`UPDATE ${t.jobs} SET
          status = ${next.status},
          error = ${jsonOrNull(next.error)},
          outputs = ${jsonOrNull(next.outputs)},
          started_at = ${next.startedAt},
          completed_at = ${next.completedAt},
          attempts = ${next.attempts},
          lease_owner = ${next.leaseOwner},
          lease_expires_at = ${next.leaseExpiresAt}
        WHERE id = ${next.id} AND status = ${expected.status} AND attempts = ${expected.attempts} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        storeErrors("update job")
      ),

    postLedger: (entry) => postLedger(sql, t, entry).pipe(storeErrors("post ledger entry")),

    insertDelivery: (delivery) =>
      sql`INSERT INTO ${t.webhook_deliveries} ${
        sql.insert({
          id: delivery.id,
          job_id: delivery.jobId,
          account_id: delivery.accountId,
          url: delivery.url,
          payload: delivery.payload,
          status: delivery.status,
          attempts: JSON.stringify(delivery.attempts),
          next_attempt_at: delivery.nextAttemptAt,
          lease_owner: delivery.leaseOwner,
          lease_expires_at: delivery.leaseExpiresAt,
          created_at: delivery.createdAt
        })
      }`.pipe(Effect.asVoid, storeErrors("insert webhook delivery")),

    listJobs: ({ accountId, after, limit, model, status }) =>
      sql`SELECT * FROM ${t.jobs} WHERE ${
        sql.and([
          sql`account_id = ${accountId}`,
          ...(status === undefined ? [] : [sql`status = ${status}`]),
          ...(model === undefined ? [] : [sql`model = ${model}`]),
          ...(after === undefined
            ? []
            : [sql`(created_at < ${after.createdAt} OR (created_at = ${after.createdAt} AND id < ${after.id}))`])
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(
        Effect.flatMap(decodeJobs),
        Effect.map((rows) => rows.map(toJob)),
        storeErrors("list jobs")
      ),

    findExhausted: (now, maxAttempts) =>
      sql`SELECT * FROM ${t.jobs} WHERE status = 'processing' AND lease_expires_at <= ${now}
        AND attempts >= ${maxAttempts} ${skipLocked}`.pipe(
        Effect.flatMap(decodeJobs),
        Effect.map((rows) => rows.map(toJob)),
        storeErrors("find exhausted jobs")
      ),

    nextRunnable: (now) =>
      sql`SELECT * FROM ${t.jobs}
        WHERE status = 'pending' OR (status = 'processing' AND lease_expires_at <= ${now})
        ORDER BY created_at, id LIMIT 1 ${skipLocked}`.pipe(Effect.flatMap(firstJob), storeErrors("find runnable job"))
  }
  return driver
})
