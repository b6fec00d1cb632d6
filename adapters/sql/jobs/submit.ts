import { Effect, Option, Schema } from "effect"
import { SqlError } from "effect/sql"
import type { StoreError } from "../../../src/domain/errors.js"
import type { Job } from "../../../src/domain/job.js"
import { type JobId, newLedgerEntryId } from "../../../src/domain/ids.js"
import { hourOf } from "../../../src/domain/spend.js"
import type { HandOffLease } from "../../../src/ports/JobRepo.js"
import { chargeOf, type GatedSubmit, type JobStoreDriver, type SubmitGates } from "../../../src/ports/JobStoreDriver.js"
import { SUBMIT_DECLINED_SQLSTATE, submitDeclinedName, submitGateName } from "../migrations/0016_submit_gate.js"
import { COUNTED_JOB_SETTING } from "../migrations/0021_submit_counts_itself.js"
import type { JobSql } from "../queue/context.js"
import { makeHandOffFragments } from "../queue/handOff.js"
import { DbInt, decodeRows, JobFromRow, storeErrors } from "../rows.js"
import { chargedRollup, firstBalance, makeChargeStatements } from "./charge.js"
import { makeFairKeys } from "./fairKey.js"
import { jobRow } from "./jobRows.js"
import { NO_KEY } from "./spend.js"

const decodeOffered = decodeRows(
  Schema.Array(Schema.Struct({
    queued_id: Schema.NullOr(Schema.String),
    queued_fair_key: Schema.NullOr(DbInt),
    lease_expires_at: Schema.NullOr(DbInt),
    taken_fair_key: Schema.NullOr(DbInt)
  }))
)
const decodeLeaseEnds = decodeRows(Schema.Array(Schema.Struct({ lease_expires_at: Schema.NullOr(DbInt), fair_key: DbInt })))
/** The key each insert (or SQLite's charge of a queued submit) computed (fairKey.ts), for the job it answers. */
const decodeFairKeys = decodeRows(Schema.Array(Schema.Struct({ fair_key: DbInt })))
const withFairKey = (job: Job) => (rows: ReadonlyArray<unknown>) =>
  Effect.map(decodeFairKeys(rows), (found) => Option.map(Option.fromNullishOr(found[0]), ({ fair_key }): Job => ({ ...job, fairKey: fair_key })))
const decodeGated = decodeRows(Schema.Array(Schema.Struct({
  gate_admitted: Schema.Boolean,
  gate_request_hash: Schema.NullOr(Schema.String),
  gate_job_id: Schema.NullOr(Schema.String),
  gate_created_at: Schema.NullOr(DbInt),
  queued_id: Schema.NullOr(Schema.String),
  queued_fair_key: Schema.NullOr(DbInt),
  taken_lease_expires_at: Schema.NullOr(DbInt),
  taken_fair_key: Schema.NullOr(DbInt),
  /** The recorded job's own id: null when the statement could not see it yet. */
  id: Schema.NullOr(Schema.String)
})))
const decodeJob = decodeRows(JobFromRow)

/** The gate's or the statement's refusal: everything it wrote rolled back. The driver's error, with its SQLSTATE, is the reason's cause. */
const isDeclined = (error: SqlError.SqlError) => (error.reason.cause as { code?: unknown } | undefined)?.code === SUBMIT_DECLINED_SQLSTATE


/**
 * The plain submit on PostgreSQL (no gate, no hand-off; see makeSubmitStatements): `built`
 * writes it from its fragments, chargingPg's charge and the job's counted insert. Only values
 * differ from one submit to the next, never the text, so `statement` compiles the text once and
 * after that only lists the values, in the order `built` binds them: building and compiling the
 * fragments was about 30 µs of each submit (docs/benchmarks.md, "The submit's statement"). A
 * test holds `statement` to `built`, text and values, for jobs of every shape.
 */
export const makePlainSubmitPg = (ctx: JobSql) => {
  const { sql, t } = ctx
  const { chargingPg } = makeChargeStatements(ctx)
  const fairKeys = makeFairKeys(ctx)

  const built = (job: Job, maxConcurrentJobs: number) => {
    const charging = chargingPg(chargeOf(job), sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs}`, true)
    return sql`WITH ${charging} INSERT INTO ${t.jobs} ${countedFromAccount(sql, fairKeys, job)} RETURNING fair_key`
  }

  /** built's values: chargingPg's, then the row's columns with the fair key's account id in its place, then the setting's. */
  const values = (job: Job, maxConcurrentJobs: number): Array<unknown> => {
    const charge = chargeOf(job)
    const { accountId, costMicroCents, jobId, now } = charge
    const { counts, row } = chargedRollup(charge)
    const params: Array<unknown> = [
      accountId,
      costMicroCents,
      accountId,
      costMicroCents,
      maxConcurrentJobs,
      costMicroCents,
      newLedgerEntryId(now),
      jobId,
      -costMicroCents,
      now,
      costMicroCents,
      row.accountId,
      row.keyId ?? NO_KEY,
      row.model,
      hourOf(row.at),
      counts.chargedMicroCents,
      counts.refundedMicroCents,
      counts.jobs,
      counts.failed,
      counts.cancelled
    ]
    const columns = jobRow(job)
    for (const column in columns) {
      params.push(column === "fair_key" ? accountId : columns[column as keyof typeof columns])
    }
    params.push(COUNTED_JOB_SETTING, job.id)
    return params
  }

  let text: string | undefined
  const statement = (job: Job, maxConcurrentJobs: number) => {
    text ??= built(job, maxConcurrentJobs).compile()[0]
    return sql.unsafe<{ readonly fair_key: unknown }>(text, values(job, maxConcurrentJobs))
  }

  return { built, statement }
}

/**
 * `(columns) SELECT values FROM account` of a queued job whose charge (`account`, chargingPg
 * counting its job) counted it: its fair key from the weight the charge read, and the setting
 * that has the insert trigger skip it (migration 0021), set before the row is written.
 */
const countedFromAccount = (sql: JobSql["sql"], { fairKey, rowOf }: ReturnType<typeof makeFairKeys>, job: Job) => {
  const { columns, values } = rowOf(job, { fair_key: fairKey(job.accountId, sql`account.fair_weight`) })
  return sql`(${columns}) SELECT ${values} FROM account WHERE set_config(${COUNTED_JOB_SETTING}, ${job.id}, true) IS NOT NULL`
}

/** The channel PgJobSignal listens on: the table prefix keeps engines sharing a database apart. */
export const jobsChannel = (prefix: string) => `${prefix}jobs`

/**
 * Inserting a job, and a whole submit (charge and insert) in one atomic write. None of these
 * statements sends NOTIFY: the caller wakes the claimers once the job is stored (JobSignal,
 * PgJobSignal.ts). A statement that notifies takes PostgreSQL's cluster-wide notify lock and
 * holds it through its commit's WAL flush, so parallel submits committed one flush at a time.
 */
export const makeSubmitStatements = (ctx: JobSql) => {
  const { sql, t } = ctx
  const { chargeSqlite, chargingPg } = makeChargeStatements(ctx)
  const { anyRunnable, claimedValues, columnsOf, offeredInserts, takenAs, values } = makeHandOffFragments(ctx)
  const fairKeys = makeFairKeys(ctx)
  const { fairKey } = fairKeys
  /** One job's insert, its fair key computed from what waits (fairKey.ts). */
  const insertRow = (job: Job) => sql`INSERT INTO ${t.jobs} (${columnsOf(job)}) VALUES (${values(job)})`

  /** The job a statement of offeredInserts wrote: queued as it is, or taken by the lease. */
  const offeredJob = (job: Job, lease: HandOffLease) => (rows: ReadonlyArray<unknown>) =>
    decodeOffered(rows).pipe(Effect.map((found) =>
      Option.map(Option.fromNullishOr(found[0]), (row) =>
        row.queued_id !== null
          ? { ...job, fairKey: row.queued_fair_key ?? job.fairKey }
          : takenAs(job, lease, row.lease_expires_at, row.taken_fair_key ?? job.fairKey))
    ))

  const queued = (job: Job) =>
    sql`${insertRow(job)} RETURNING fair_key`.pipe(Effect.flatMap(withFairKey(job)), Effect.map(Option.getOrElse(() => job)))

  const insertJob: JobStoreDriver["insertJob"] = sql.onDialectOrElse({
    pg: () => (job: Job, handOff: HandOffLease | undefined) =>
      (handOff === undefined
        ? queued(job)
        : sql`WITH ${offeredInserts(job, handOff, sql``)}
            SELECT queued.id AS queued_id, queued.fair_key AS queued_fair_key, taken.lease_expires_at, taken.fair_key AS taken_fair_key
            FROM runnable LEFT JOIN queued ON true LEFT JOIN taken ON true`.pipe(
          Effect.flatMap(offeredJob(job, handOff)),
          Effect.map(Option.getOrElse(() => job))
        )).pipe(storeErrors("insert job")),
    orElse: () => (job: Job, handOff: HandOffLease | undefined) =>
      (handOff === undefined
        ? queued(job)
        : sql`INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${claimedValues(job, handOff)} WHERE NOT ${anyRunnable(handOff)}
            RETURNING lease_expires_at, fair_key`.pipe(
          Effect.flatMap(decodeLeaseEnds),
          Effect.flatMap((rows) =>
            rows[0] === undefined ? queued(job) : Effect.succeed(takenAs(job, handOff, rows[0].lease_expires_at, rows[0].fair_key))
          )
        )).pipe(storeErrors("insert job"))
  })

  const plainPg = makePlainSubmitPg(ctx)

  const submit: JobStoreDriver["submit"] = sql.onDialectOrElse({
    /**
     * One statement, so one round trip and no transaction around it: the charge of chargingPg,
     * admitted only while the account's active jobs stay under its maximum, and the job's
     * insert, which counts itself active (trigger), queued or handed off as insertJob does.
     */
    pg: () => (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined) => {
      return (handOff === undefined
        ? plainPg.statement(job, maxConcurrentJobs).pipe(Effect.flatMap(withFairKey(job)))
        : sql`WITH ${chargingPg(chargeOf(job), sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs}`, false)}, ${
          offeredInserts(job, handOff, sql`account,`)
        }
            SELECT queued.id AS queued_id, queued.fair_key AS queued_fair_key, taken.lease_expires_at, taken.fair_key AS taken_fair_key
            FROM account, runnable LEFT JOIN queued ON true LEFT JOIN taken ON true`.pipe(
            Effect.flatMap(offeredJob(job, handOff))
          )).pipe(storeErrors("submit job"))
    },
    /**
     * SQLite's statements are local calls: the charge and the insert in one transaction. A queued
     * job's fair key is read by the charge from the account's row it writes (one writer: nothing
     * waiting changes before the insert), so the insert is a plain row, as before fair keys.
     */
    orElse: () => (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined) =>
      sql.withTransaction(Effect.gen(function*() {
        const charge = chargeOf(job)
        const admits = sql`AND active_jobs < ${maxConcurrentJobs}`
        if (handOff !== undefined) {
          const charged = yield* chargeSqlite(charge, admits).pipe(Effect.flatMap(firstBalance))
          if (Option.isNone(charged)) return Option.none<Job>()
          return Option.some(yield* insertJob(job, handOff))
        }
        const [charged] = yield* chargeSqlite(charge, admits, sql`, ${fairKey(job.accountId, sql`fair_weight`)} AS fair_key`).pipe(
          Effect.flatMap(decodeFairKeys)
        )
        if (charged === undefined) return Option.none<Job>()
        const queued: Job = { ...job, fairKey: charged.fair_key }
        yield* sql`INSERT INTO ${t.jobs} ${sql.insert(jobRow(queued))}`
        return Option.some(queued)
      })).pipe(storeErrors("submit job"))
  })

  const gateCall = (job: Job, gates: SubmitGates) => {
    const { accountSpend, day, idempotency, keySpend, minute } = gates
    return sql`${sql(submitGateName(t.prefix))}(
      p_account_id => ${job.accountId}, p_key_id => ${job.apiKeyId ?? NO_KEY}, p_model => ${job.model},
      p_version => ${job.version}, p_now => ${job.createdAt}, p_job_id => ${job.id},
      p_idempotency_key => ${idempotency?.key ?? null}::text, p_request_hash => ${idempotency?.record.requestHash ?? null}::text,
      p_not_before => ${idempotency?.notBefore ?? null}::bigint,
      p_minute_ms => ${minute?.windowMs ?? null}::bigint, p_minute_bucket => ${minute?.bucket ?? null}::bigint,
      p_minute_most => ${minute?.mostBefore ?? null}::bigint,
      p_day_ms => ${day?.windowMs ?? null}::bigint, p_day_bucket => ${day?.bucket ?? null}::bigint,
      p_day_most => ${day?.mostBefore ?? null}::bigint,
      p_account_since => ${accountSpend?.since ?? null}::bigint, p_account_most => ${accountSpend?.mostBefore ?? null}::bigint,
      p_key_since => ${keySpend?.since ?? null}::bigint, p_key_most => ${keySpend?.mostBefore ?? null}::bigint
    )`
  }

  /**
   * The gated submit in one statement: the gate (migration 0016) claims the key, locks the
   * account, checks and counts the windows and the spend; then submit's charge and insert run
   * only when it admitted. Admitted by the gate but refused by the charge, the statement raises
   * and rolls back whole, the key's claim and the windows' counts with it. A live record of the
   * key writes nothing and comes back with its job, when this statement's snapshot (taken
   * before the claim waited on a parallel one) can see it.
   */
  const submitGated = sql.onDialectOrElse({
    pg: () => (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined, gates: SubmitGates): Effect.Effect<GatedSubmit, StoreError> => {
      const charging = chargingPg(
        chargeOf(job),
        sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs} AND (SELECT gate_admitted FROM gate)`,
        handOff === undefined
      )
      const declined = sql`${sql(submitDeclinedName(t.prefix))}()`
      const written = handOff === undefined
        ? sql`WITH gate AS (SELECT * FROM ${gateCall(job, gates)}), ${charging}, inserted AS (
              INSERT INTO ${t.jobs} ${countedFromAccount(sql, fairKeys, job)} RETURNING id, fair_key
            )
            SELECT gate.*, inserted.id AS queued_id, inserted.fair_key AS queued_fair_key,
              NULL::bigint AS taken_lease_expires_at, NULL::bigint AS taken_fair_key,
              CASE WHEN gate.gate_admitted AND inserted.id IS NULL THEN ${declined} END AS declined,
              previous.*
            FROM gate LEFT JOIN inserted ON true LEFT JOIN LATERAL (SELECT * FROM ${t.jobs} WHERE id = gate.gate_job_id) previous ON true`
        : sql`WITH gate AS (SELECT * FROM ${gateCall(job, gates)}), ${charging}, ${offeredInserts(job, handOff, sql`account,`)}
            SELECT gate.*, queued.id AS queued_id, queued.fair_key AS queued_fair_key,
              taken.lease_expires_at AS taken_lease_expires_at, taken.fair_key AS taken_fair_key,
              CASE WHEN gate.gate_admitted AND queued.id IS NULL AND NOT EXISTS (SELECT 1 FROM taken) THEN ${declined} END AS declined,
              previous.*
            FROM gate LEFT JOIN runnable ON true LEFT JOIN queued ON true LEFT JOIN taken ON true
              LEFT JOIN LATERAL (SELECT * FROM ${t.jobs} WHERE id = gate.gate_job_id) previous ON true`
      return written.pipe(
        Effect.flatMap((rows) =>
          decodeGated(rows).pipe(Effect.flatMap((found): Effect.Effect<GatedSubmit, Schema.SchemaError> => {
            const row = found[0]
            if (row === undefined) return Effect.succeed({ _tag: "Declined" })
            if (row.gate_admitted) {
              return Effect.succeed({
                _tag: "Created",
                job: row.queued_id !== null || handOff === undefined
                  ? { ...job, fairKey: row.queued_fair_key ?? job.fairKey }
                  : takenAs(job, handOff, row.taken_lease_expires_at, row.taken_fair_key ?? job.fairKey)
              })
            }
            if (row.gate_request_hash === null || row.gate_job_id === null || row.gate_created_at === null) {
              return Effect.succeed({ _tag: "Declined" })
            }
            const record = { requestHash: row.gate_request_hash, jobId: row.gate_job_id as JobId, createdAt: row.gate_created_at }
            return row.id === null
              ? Effect.succeed({ _tag: "Recorded", record, job: Option.none() })
              : Effect.map(decodeJob(rows[0]), (previous) => ({ _tag: "Recorded", record, job: Option.some(previous) }))
          }))
        ),
        Effect.catchIf(
          (error): error is SqlError.SqlError => SqlError.isSqlError(error) && isDeclined(error),
          () => Effect.succeed<GatedSubmit>({ _tag: "Declined" })
        ),
        storeErrors("submit job")
      )
    },
    orElse: () => undefined
  })

  return { insertJob, submit, submitGated }
}
