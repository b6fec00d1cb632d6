import { Effect } from "effect"
import type { AccountId, JobId } from "../../../src/domain/ids.js"
import { MINUTE_MS } from "../../../src/domain/rateLimit.js"
import type { JobLeaseDriver } from "../../../src/ports/JobLeaseDriver.js"
import { allJobs } from "../jobs/jobRows.js"
import { storeErrors } from "../rows.js"
import { makeClaimFragments } from "./claims.js"
import type { JobSql } from "./context.js"

/** What the reaper's and the queue relay's passes read and write, each pass under a named lease. */
export const makeReaperStatements = (ctx: JobSql) => {
  const { clock, sql, t } = ctx
  const { leasedJobs } = makeClaimFragments(ctx)
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })

  const findExhausted: JobLeaseDriver["findExhausted"] = (now, maxAttempts, limit) =>
    sql`SELECT * FROM ${leasedJobs} WHERE status = 'processing' AND lease_expires_at <= ${clock.now(now)}
      AND attempts >= ${maxAttempts} ORDER BY lease_expires_at LIMIT ${limit} ${skipLocked}`.pipe(
      Effect.flatMap(allJobs),
      storeErrors("find exhausted jobs")
    )

  const queueGaps: JobLeaseDriver["queueGaps"] = ({ after, graceMs, limit, maxAttempts, now }) =>
    Effect.all({
      pending: sql`SELECT id, account_id, created_at, fair_key FROM ${t.jobs} WHERE status = 'pending' AND created_at <= ${now - graceMs}
          ${after === null ? sql`` : sql`AND (fair_key, id) > (${after.fairKey}, ${after.id})`}
          ORDER BY fair_key, id LIMIT ${limit}`.pipe(
        Effect.map((rows) =>
          rows.map((row) => ({ id: row["id"] as JobId, accountId: row["account_id"] as AccountId, createdAt: Number(row["created_at"]), fairKey: Number(row["fair_key"]) }))
        )
      ),
      // The grace taken off the clock, not added to the column: a bound on lease_expires_at is a
      // range of the leases' index; `lease_expires_at + grace` was a filter on every processing job.
      expired: sql`SELECT id, account_id FROM ${leasedJobs} WHERE status = 'processing' AND lease_expires_at <= ${clock.ago(now, graceMs)}
          AND attempts < ${maxAttempts} ORDER BY lease_expires_at LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map((row) => ({ id: row["id"] as JobId, accountId: row["account_id"] as AccountId })))
      )
    }).pipe(storeErrors("read what the queue may have lost"))

  const takeLease: JobLeaseDriver["takeLease"] = (name, owner, now, expiresAt) =>
    sql`INSERT INTO ${t.leases} (name, owner, expires_at) VALUES (${name}, ${owner}, ${expiresAt})
      ON CONFLICT (name) DO UPDATE SET owner = ${owner}, expires_at = ${expiresAt}
      WHERE ${t.leases}.owner = ${owner} OR ${t.leases}.expires_at <= ${now}
      RETURNING owner`.pipe(Effect.map((rows) => rows.length > 0), storeErrors("take lease"))

  // Twice the window: every job of a bucket has left it by then, whatever the bucket's width.
  const pruneWindows: JobLeaseDriver["pruneWindows"] = (now) =>
    sql`DELETE FROM ${t.rate_windows} WHERE bucket + 2 * window_ms <= ${now}`.pipe(
      Effect.andThen(sql`DELETE FROM ${t.provider_starts} WHERE bucket + ${2 * MINUTE_MS} <= ${now}`),
      Effect.asVoid,
      storeErrors("prune rate-limit windows")
    )

  const foldJobEnds: JobLeaseDriver["foldJobEnds"] = sql.onDialectOrElse({
    pg: () => (limit: number) =>
      sql`WITH ended AS (
          DELETE FROM ${t.active_job_ends} WHERE ctid = ANY(ARRAY(
            SELECT ctid FROM ${t.active_job_ends} LIMIT ${limit} FOR UPDATE SKIP LOCKED
          )) RETURNING account_id
        ), folded AS (
          SELECT account_id, COUNT(*) AS n FROM ended GROUP BY account_id
        )
        UPDATE ${t.accounts} AS a SET active_jobs = a.active_jobs - folded.n FROM folded WHERE a.id = folded.account_id`
        .pipe(Effect.asVoid, storeErrors("fold job ends")),
    // SQLite's triggers count a job's end in its account's row at once: nothing is kept apart.
    orElse: () => () => Effect.void
  })

  return { findExhausted, queueGaps, takeLease, pruneWindows, foldJobEnds }
}
