import type { Statement } from "effect/sql"
import { claimedJob, type Job } from "../../../src/domain/job.js"
import type { HandOffLease } from "../../../src/ports/JobRepo.js"
import { makeFairKeys } from "../jobs/fairKey.js"
import { makeClaimFragments } from "./claims.js"
import type { JobSql } from "./context.js"

/**
 * The local hand-off in SQL: a submitted job written as an idle local worker's claim when no
 * job is runnable, so FIFO holds: a job handed off never passes one that waits.
 */
export const makeHandOffFragments = (ctx: JobSql) => {
  const { clock, sql, t } = ctx
  const { leasedJobs, reclaimable } = makeClaimFragments(ctx)

  const { columnsOf, valuesOf } = makeFairKeys(ctx)
  const values = (job: Job) => valuesOf(job)
  /** claimedJob's row, with the lease's expiry on the lease clock as a claim writes it. */
  const claimedValues = (job: Job, lease: HandOffLease) =>
    valuesOf(claimedJob(job, lease), { lease_expires_at: clock.until(lease.now, lease.leaseExpiresAt) })
  /** What a claim could take now: a pending job, or a reclaimable one. */
  const anyRunnable = (lease: HandOffLease) =>
    sql`(EXISTS (SELECT 1 FROM ${t.jobs} WHERE status = 'pending')
      OR EXISTS (SELECT 1 FROM ${leasedJobs} WHERE ${reclaimable(lease.now, lease.maxAttempts)}))`
  /** The job as a hand-off inserted it: claimedJob's row but for the lease's end, which the lease clock set. */
  const takenAs = (job: Job, lease: HandOffLease, leaseExpiresAt: number | null, fairKey: number): Job => ({
    ...claimedJob(job, lease),
    leaseExpiresAt,
    fairKey
  })
  /**
   * The CTEs `runnable`, `queued` and `taken` of one statement: the job inserted pending when
   * something is runnable, else as the lease's claim; each insert only for a row of `gate`
   * (the charge's `account`), when there is one.
   */
  const offeredInserts = (job: Job, lease: HandOffLease, gate: Statement.Fragment) =>
    sql`runnable AS (
        SELECT ${anyRunnable(lease)} AS found
      ), queued AS (
        INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${values(job)} FROM ${gate} runnable WHERE runnable.found RETURNING id, fair_key
      ), taken AS (
        INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${claimedValues(job, lease)}
        FROM ${gate} runnable WHERE NOT runnable.found RETURNING lease_expires_at, fair_key
      )`

  return { columnsOf, values, claimedValues, anyRunnable, takenAs, offeredInserts }
}
