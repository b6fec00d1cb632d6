import { Cause, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { JobId } from "../../src/domain/ids.js"
import { RetentionRepo } from "../../src/ports/RetentionRepo.js"
import { indexedBy } from "./indexedBy.js"
import { statusFilter } from "./queue/statusFilter.js"
import { decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeIds = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String })))

/**
 * Retention over SQLite or PostgreSQL. Ended jobs are read from the partial index of ended jobs
 * by end (migration 0006); deliveries by their job, through their unique index. A batch's jobs
 * are removed by primary key, their status a filter (`statusFilter`): statistics from before
 * most jobs ended would otherwise have every batch read all ended jobs from a status index.
 */
export const makeSqlRetention = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const jobStatus = statusFilter(sql)
  // In the order of their end, the batch's first jobs first (indexedBy.ts): through the status
  // index SQLite read every ended job of the swept statuses and sorted them, for each batch.
  const endedJobs = indexedBy(sql, t.jobs, t.jobs_ended, sql`j`)

  return RetentionRepo.of({
    takeLease: (name, owner, now, expiresAt) =>
      sql`INSERT INTO ${t.leases} (name, owner, expires_at) VALUES (${name}, ${owner}, ${expiresAt})
        ON CONFLICT (name) DO UPDATE SET owner = ${owner}, expires_at = ${expiresAt}
        WHERE ${t.leases}.owner = ${owner} OR ${t.leases}.expires_at <= ${now}
        RETURNING owner`.pipe(Effect.map((rows) => rows.length > 0), storeErrors("take lease")),

    endedJobs: ({ endedBy, limit, statuses, unsentDeliveries }) =>
      statuses.length === 0
        ? Effect.succeed([])
        : sql`SELECT j.id FROM ${endedJobs}
            WHERE j.completed_at <= ${endedBy} AND j.status IN ${sql.in(statuses)} ${
          unsentDeliveries.length === 0 ? sql`` : sql`AND NOT EXISTS (
              SELECT 1 FROM ${t.webhook_deliveries} d WHERE d.job_id = j.id AND d.status IN ${sql.in(unsentDeliveries)}
            )`
        }
            ORDER BY j.completed_at LIMIT ${limit}`.pipe(
          Effect.flatMap(decodeIds),
          Effect.map((rows) => rows.map((row) => row.id as JobId)),
          storeErrors("find ended jobs")
        ),

    removeJobs: ({ jobIds, statuses, unsentDeliveries }) =>
      jobIds.length === 0 || statuses.length === 0
        ? Effect.succeed({ jobs: 0, deliveries: 0 })
        : sql.withTransaction(Effect.gen(function*() {
          const deliveries = yield* sql`DELETE FROM ${t.webhook_deliveries}
            WHERE job_id IN (SELECT id FROM ${t.jobs} WHERE id IN ${sql.in(jobIds)} AND ${jobStatus} IN ${sql.in(statuses)})
              ${unsentDeliveries.length === 0 ? sql`` : sql`AND status NOT IN ${sql.in(unsentDeliveries)}`}
            RETURNING id`
          // A delivery made unsent since the jobs were read (a retry) is left, and keeps its job.
          const jobs = yield* sql`DELETE FROM ${t.jobs}
            WHERE id IN ${sql.in(jobIds)} AND ${jobStatus} IN ${sql.in(statuses)}
              AND NOT EXISTS (SELECT 1 FROM ${t.webhook_deliveries} d WHERE d.job_id = ${t.jobs}.id)
            RETURNING id`
          // The jobs' provider log lines go with them (migration 0018).
          const removed = yield* decodeIds(jobs)
          if (removed.length > 0) yield* sql`DELETE FROM ${t.job_logs} WHERE job_id IN ${sql.in(removed.map((row) => row.id))}`
          return { jobs: jobs.length, deliveries: deliveries.length }
        })).pipe(storeErrors("remove jobs")),

    // The age is checked again on the row deleted: a key reused since it was read is live again
    // and stays. The limit is written into the statement so PostgreSQL's generic plan knows the
    // batch is small and deletes through the primary key instead of hashing the whole table.
    purgeIdempotency: (createdBefore, limit) =>
      Number.isSafeInteger(limit) && limit > 0
        ? sql`DELETE FROM ${t.idempotency_keys}
            WHERE created_at < ${createdBefore} AND (account_id, idempotency_key) IN (
              SELECT account_id, idempotency_key FROM ${t.idempotency_keys}
              WHERE created_at < ${createdBefore} LIMIT ${sql.literal(String(limit))}
            )
            RETURNING account_id`.pipe(Effect.map((rows) => rows.length), storeErrors("purge idempotency keys"))
        : Effect.die(new Cause.IllegalArgumentError(`An idempotency purge needs a positive whole limit, not ${limit}`))
  })
})
