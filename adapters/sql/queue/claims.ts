import { Effect } from "effect"
import type { Statement } from "effect/sql"
import type { ClaimLease } from "../../../src/domain/job.js"
import type { VersionRef } from "../../../src/domain/providerLimits.js"
import type { ClaimBatch, JobLeaseDriver } from "../../../src/ports/JobLeaseDriver.js"
import { allJobs } from "../jobs/jobRows.js"
import { indexedBy } from "../indexedBy.js"
import { storeErrors } from "../rows.js"
import type { JobSql } from "./context.js"
import { statusFilter } from "./statusFilter.js"

/** The fragments every claim is written with. */
export const makeClaimFragments = ({ clock, sql, t }: JobSql) => {
  /**
   * A job a claim may take over: its lease expired by `now` with attempts left. `status` is how
   * the test reads the column (byIdStatus for a claim of given jobs).
   */
  const reclaimable = (now: number, maxAttempts: number, status: Statement.Fragment = sql`status`) =>
    sql`${status} = 'processing' AND lease_expires_at <= ${clock.now(now)} AND attempts < ${maxAttempts}`

  /**
   * The jobs table as a read of leases by their expiry names it, through the leases' index
   * (indexedBy.ts): through the status index SQLite read every processing job, checking each
   * one's lease; a hand-off's check that finds none cost 1.3 ms beside 10,000 generations in
   * flight, against 0.03 ms through the leases' index.
   */
  const leasedJobs = indexedBy(sql, t.jobs, t.jobs_leases)

  /**
   * The jobs table as a claim's read of pending jobs in claim order names it, through the
   * pending jobs' index: read through the status index, every pending job was sorted for each
   * claim, 25.6 ms a claim beside a backlog of 100,000, 0.03 in order.
   */
  const pendingJobs = indexedBy(sql, t.jobs, t.jobs_pending)

  /**
   * claimedJob (src/domain/job.ts) in SQL: Pickup and Reclaim both lead to processing; a Pickup
   * marks the provider start begun. The right-hand sides read the row as it was.
   */
  const greatest = sql.onDialectOrElse({ pg: () => sql.literal("GREATEST"), orElse: () => sql.literal("MAX") })
  const claimSet = (claim: ClaimLease) =>
    sql`status = 'processing', attempts = attempts + 1, started_at = COALESCE(started_at, ${greatest}(created_at, ${claim.now})),
      lease_owner = ${claim.leaseOwner}, lease_expires_at = ${clock.until(claim.now, claim.leaseExpiresAt)},
      provider_phase = CASE WHEN status = 'pending' THEN 'starting' ELSE provider_phase END,
      provider_starts = CASE WHEN status = 'pending' THEN provider_starts + 1 ELSE provider_starts END`

  /** The versions as a row list, for `(model, version) IN (...)` in both dialects. */
  const versionRows = (versions: ReadonlyArray<VersionRef>) =>
    sql`VALUES ${sql.csv(versions.map((v) => sql`(${v.model}, ${v.version})`))}`

  /** `(model, version)` is none of `versions`: pending jobs of limited versions are the limited claim's. */
  const notAmong = (versions: ReadonlyArray<VersionRef>) =>
    versions.length === 0 ? sql`` : sql`AND (model, version) NOT IN (${versionRows(versions)})`

  /**
   * PostgreSQL: the claim's CTEs (`expired`, `pending`, `picked`) and its UPDATE, up to `limit` (a
   * fragment: a number, or a subquery of the statement around it). Expired leases from the partial
   * index of processing jobs by expiry, then pending jobs from the partial index of pending jobs in
   * claim order (fair_key, id, see src/domain/fairShare.ts): each side reads at most `limit` index
   * entries, locking them with SKIP LOCKED, and one UPDATE writes the claim on the picked rows.
   * `besideEndingOf` names the record set of jobs the same statement ends: the expired side leaves
   * them out, as PostgreSQL applies only one of two updates of a row in one statement.
   */
  const claimPg = (claim: ClaimBatch, limit: Statement.Fragment, besideEndingOf?: string) => ({
    ctes: sql`expired AS (
          SELECT id FROM ${t.jobs} WHERE ${reclaimable(claim.now, claim.maxAttempts)}
            ${besideEndingOf === undefined ? sql`` : sql`AND id <> ALL(ARRAY(SELECT id FROM ${sql(besideEndingOf)}))`}
          ORDER BY lease_expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ), pending AS (
          SELECT id FROM ${t.jobs} WHERE status = 'pending' ${notAmong(claim.exclude)}
          ORDER BY fair_key, id LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ), picked AS (
          (SELECT id FROM expired) UNION ALL (SELECT id FROM pending) LIMIT ${limit}
        )`,
    update: sql`UPDATE ${t.jobs} AS j SET ${claimSet(claim)} FROM picked WHERE j.id = picked.id RETURNING j.*`
  })

  return { reclaimable, leasedJobs, pendingJobs, claimSet, versionRows, notAmong, claimPg }
}

/** Claims: a batch in claim order, or given jobs. */
export const makeClaimStatements = (ctx: JobSql) => {
  const { sql, t } = ctx
  const { claimPg, claimSet, leasedJobs, notAmong, pendingJobs, reclaimable } = makeClaimFragments(ctx)

  const claimBatch = sql.onDialectOrElse({
    /**
     * See claimPg. The limit is read through a subquery, as the riding claim's is: PostgreSQL
     * costs a generic plan's `LIMIT $n` for a tenth of the rows it expects, so once its
     * statistics counted a backlog of pending jobs, every claim's plan made for its limit looked
     * cheaper and the prepared one was never kept (about 0.3 ms of planning a claim). Through a
     * subquery neither plan knows the limit: the generic one is kept from the sixth run, with the
     * same index scans.
     */
    pg: () => (claim: ClaimBatch) => {
      const { ctes, update } = claimPg(claim, sql`(SELECT ${claim.limit}::int)`)
      return sql`WITH ${ctes} ${update}`
    },
    /** The same picks in SQLite, whose one writer already keeps parallel claims apart. */
    orElse: () => (claim: ClaimBatch) =>
      sql`UPDATE ${t.jobs} SET ${claimSet(claim)} WHERE id IN (
          SELECT id FROM (
            SELECT id FROM ${leasedJobs} WHERE ${reclaimable(claim.now, claim.maxAttempts)}
            ORDER BY lease_expires_at LIMIT ${claim.limit}
          )
          UNION ALL
          SELECT id FROM (
            SELECT id FROM ${pendingJobs} WHERE status = 'pending' ${notAmong(claim.exclude)} ORDER BY fair_key, id LIMIT ${claim.limit}
          )
          LIMIT ${claim.limit}
        ) RETURNING *`
  })

  /**
   * The status as a claim of given jobs tests it, so the jobs are found by their ids. Written
   * plainly, statistics from a time few jobs were pending (an idle queue that just got a backlog)
   * let PostgreSQL read every pending job from a pending index and check each id.
   */
  const byIdStatus = statusFilter(sql)

  const claimIds: JobLeaseDriver["claimIds"] = (ids, claim) =>
    (ids.length === 0
      ? Effect.succeed([])
      : sql`UPDATE ${t.jobs} SET ${claimSet(claim)} WHERE id IN ${sql.in(ids)}
          AND ((${byIdStatus} = 'pending' ${notAmong(claim.exclude)}) OR (${reclaimable(claim.now, claim.maxAttempts, byIdStatus)})) RETURNING *`.pipe(
        Effect.flatMap(allJobs)
      )).pipe(storeErrors("claim jobs by id"))

  return {
    claimBatch: ((claim) => claimBatch(claim).pipe(Effect.flatMap(allJobs), storeErrors("claim jobs"))) satisfies JobLeaseDriver["claimBatch"],
    claimIds
  }
}
