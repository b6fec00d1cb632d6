import type { Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { Job } from "../../../src/domain/job.js"
import type { HandOffLease } from "../../../src/ports/JobRepo.js"
import { chargeOf, type JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import type { JobSql } from "../queue/context.js"
import { makeHandOffFragments } from "../queue/handOff.js"
import { DbInt, storeErrors } from "../rows.js"
import { makeChargeStatements } from "./charge.js"
import { jobRow } from "./jobRows.js"

const decodeOffered = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ queued_id: Schema.NullOr(Schema.String), lease_expires_at: Schema.NullOr(DbInt) }))
)
const decodeLeaseEnds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ lease_expires_at: Schema.NullOr(DbInt) })))


/** The channel PgJobSignal listens on: the table prefix keeps engines sharing a database apart. */
export const jobsChannel = (prefix: string) => `${prefix}jobs`

/**
 * Inserting a job, and a whole submit (charge and insert) in one atomic write. `wakeClaimers`:
 * the store is the queue, so PostgreSQL's statements NOTIFY its claimers; false with a broker,
 * which carries the job to the workers instead (none listens).
 */
export const makeSubmitStatements = (ctx: JobSql, { wakeClaimers }: { readonly wakeClaimers: boolean }) => {
  const { sql, t } = ctx
  const { chargeSqlite, chargingPg } = makeChargeStatements(ctx)
  const { anyRunnable, claimedValues, columnsOf, offeredInserts, takenAs, values } = makeHandOffFragments(ctx)
  /** What a PostgreSQL statement selects for the job it queued. */
  const wake = wakeClaimers ? sql`pg_notify(${jobsChannel(t.prefix)}, 'jobs')` : sql`NULL`

  /** The job a statement of offeredInserts wrote: queued as it is, or taken by the lease. */
  const offeredJob = (job: Job, lease: HandOffLease) => (rows: ReadonlyArray<unknown>) =>
    decodeOffered(rows).pipe(Effect.map((found) =>
      Option.map(Option.fromNullable(found[0]), (row) => (row.queued_id !== null ? job : takenAs(job, lease, row.lease_expires_at)))
    ))

  const insertJob: JobStoreDriver["insertJob"] = sql.onDialectOrElse({
    // NOTIFY (when `wake` is one) in the same statement, so claimers hear of the job when it commits, never before.
    pg: () => (job: Job, handOff: HandOffLease | undefined) =>
      (handOff === undefined
        ? sql`WITH inserted AS (INSERT INTO ${t.jobs} ${sql.insert(jobRow(job))} RETURNING id)
            SELECT ${wake} FROM inserted`.pipe(Effect.as(job))
        : sql`WITH ${offeredInserts(job, handOff, sql``)}
            SELECT queued.id AS queued_id, taken.lease_expires_at,
              CASE WHEN queued.id IS NOT NULL THEN ${wake} END AS woke
            FROM runnable LEFT JOIN queued ON true LEFT JOIN taken ON true`.pipe(
          Effect.flatMap(offeredJob(job, handOff)),
          Effect.map(Option.getOrElse(() => job))
        )).pipe(storeErrors("insert job")),
    orElse: () => (job: Job, handOff: HandOffLease | undefined) =>
      (handOff === undefined
        ? sql`INSERT INTO ${t.jobs} ${sql.insert(jobRow(job))}`.pipe(Effect.as(job))
        : sql`INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${claimedValues(job, handOff)} WHERE NOT ${anyRunnable(handOff)}
            RETURNING lease_expires_at`.pipe(
          Effect.flatMap(decodeLeaseEnds),
          Effect.flatMap((rows) =>
            rows[0] === undefined
              ? sql`INSERT INTO ${t.jobs} (${columnsOf(job)}) VALUES (${values(job)})`.pipe(Effect.as(job))
              : Effect.succeed(takenAs(job, handOff, rows[0].lease_expires_at))
          )
        )).pipe(storeErrors("insert job"))
  })

  /** `(columns) SELECT values FROM source` of one encoded row: the job encoded once for both. */
  const insertedFrom = (row: Record<string, unknown>, source: Statement.Fragment) =>
    sql`(${sql.literal(Object.keys(row).join(", "))}) SELECT ${sql.csv(Object.values(row).map((value) => sql`${value}`))} FROM ${source}`

  const submit: JobStoreDriver["submit"] = sql.onDialectOrElse({
    /**
     * One statement, so one round trip and no transaction around it: the charge of chargingPg,
     * admitted only while the account's active jobs stay under its maximum, and the job's
     * insert, which counts itself active (trigger), queued or handed off as insertJob does.
     */
    pg: () => (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined) => {
      const charge = chargeOf(job)
      const charging = chargingPg(charge, sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs}`)
      return (handOff === undefined
        ? sql`WITH ${charging}, inserted AS (
              INSERT INTO ${t.jobs} ${insertedFrom(jobRow(job), sql`account`)} RETURNING id
            )
            SELECT ${wake} FROM inserted`.pipe(
            Effect.map((rows) => (rows.length > 0 ? Option.some(job) : Option.none()))
          )
        : sql`WITH ${charging}, ${offeredInserts(job, handOff, sql`account,`)}
            SELECT queued.id AS queued_id, taken.lease_expires_at,
              CASE WHEN queued.id IS NOT NULL THEN ${wake} END AS woke
            FROM account, runnable LEFT JOIN queued ON true LEFT JOIN taken ON true`.pipe(
            Effect.flatMap(offeredJob(job, handOff))
          )).pipe(storeErrors("submit job"))
    },
    /** SQLite's statements are local calls: the charge and the insert in one transaction. */
    orElse: () => (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined) =>
      sql.withTransaction(Effect.gen(function*() {
        const charge = chargeOf(job)
        const charged = yield* chargeSqlite(charge, sql`AND active_jobs < ${maxConcurrentJobs}`)
        if (Option.isNone(charged)) return Option.none<Job>()
        return Option.some(yield* insertJob(job, handOff))
      })).pipe(storeErrors("submit job"))
  })

  return { insertJob, submit }
}
