import { Effect, Option, Schema } from "effect"
import { SqlError, type Statement } from "effect/sql"
import type { StoreError } from "../../../src/domain/errors.js"
import { FAIR_STEP_UNIT } from "../../../src/domain/fairShare.js"
import type { Job } from "../../../src/domain/job.js"
import type { JobId } from "../../../src/domain/ids.js"
import type { HandOffLease } from "../../../src/ports/JobRepo.js"
import { chargeOf, type GatedSubmit, type JobStoreDriver, type SubmitGates } from "../../../src/ports/JobStoreDriver.js"
import { SUBMIT_DECLINED_SQLSTATE, submitDeclinedName, submitGateName } from "../migrations/0016_submit_gate.js"
import { COUNTED_JOB_SETTING } from "../migrations/0021_submit_counts_itself.js"
import { shedBeforeStore } from "../pgShedding.js"
import type { JobSql } from "../queue/context.js"
import { makeHandOffFragments } from "../queue/handOff.js"
import { DbInt, decodeRows, type JobColumns, JobFromRow, storeErrors } from "../rows.js"
import { type ChargeBinds, chargeBinds, firstBalance, makeChargeStatements, SUBMITTED_COLUMNS, submittedRow } from "./charge.js"
import { makeStatementBatches } from "./statementBatches.js"
import { compiledOnce } from "./compiledOnce.js"
import { makeTransactionBatches } from "./transactionBatches.js"
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
/** The jobs a statement of plain submits inserted, each with the fair key it computed; null for a submit it did not decide. */
const decodeStored = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String, fair_key: Schema.NullOr(DbInt) })))

/** What the statement of a batch of plain submits binds: its submits (chargingEachPg's `submitted`) and their jobs' rows, as JSON. */
interface EachBinds extends Record<string, unknown> {
  readonly submitted: string
  readonly rows: string
}

/** A plain queued submit on PostgreSQL, written with the others of its batch. */
interface PlainSubmit {
  readonly job: Job
  readonly maxConcurrentJobs: number
}

/** The gate's or the statement's refusal: everything it wrote rolled back. The driver's error, with its SQLSTATE, is the reason's cause. */
const isDeclined = (error: SqlError.SqlError) => (error.reason.cause as { code?: unknown } | undefined)?.code === SUBMIT_DECLINED_SQLSTATE


/** One SQLite submit of a shared transaction (transactionBatches.ts). */
interface SubmitWrite {
  readonly job: Job
  readonly maxConcurrentJobs: number
  readonly handOff: HandOffLease | undefined
}

/** What a queued submit's statement binds (compiledOnce.ts): its charge, the account's bound on active jobs, the job's row. */
const submitBinds = (job: Job, maxConcurrentJobs: number) => ({
  charge: chargeBinds(chargeOf(job)),
  maxConcurrentJobs,
  row: jobRow(job)
})
type SubmitBinds = ReturnType<typeof submitBinds>

/** What the gate's call binds (migration 0016): null for a gate the submit does not carry. */
const gateBinds = (job: Job, { accountSpend, day, idempotency, keySpend, minute }: SubmitGates) => ({
  accountId: job.accountId,
  keyId: job.apiKeyId ?? NO_KEY,
  model: job.model,
  version: job.version,
  now: job.createdAt,
  jobId: job.id,
  idempotencyKey: idempotency?.key ?? null,
  requestHash: idempotency?.record.requestHash ?? null,
  notBefore: idempotency?.notBefore ?? null,
  minuteMs: minute?.windowMs ?? null,
  minuteBucket: minute?.bucket ?? null,
  minuteMost: minute?.mostBefore ?? null,
  dayMs: day?.windowMs ?? null,
  dayBucket: day?.bucket ?? null,
  dayMost: day?.mostBefore ?? null,
  accountSince: accountSpend?.since ?? null,
  accountMost: accountSpend?.mostBefore ?? null,
  keySince: keySpend?.since ?? null,
  keyMost: keySpend?.mostBefore ?? null
})
type GateBinds = ReturnType<typeof gateBinds>

const gatedBinds = (job: Job, maxConcurrentJobs: number, gates: SubmitGates) => ({ ...submitBinds(job, maxConcurrentJobs), gate: gateBinds(job, gates) })
type GatedBinds = ReturnType<typeof gatedBinds>

/**
 * `(columns) SELECT values FROM account` of a queued job whose charge (`account`, chargingPg
 * counting its job) counted it: its fair key from the weight the charge read, and the setting
 * that has the insert trigger skip it (migration 0021), set before the row is written. `joined`:
 * what the row joins besides (the plain submit's NOTIFY).
 */
const countedFromAccount = (
  sql: JobSql["sql"],
  { fairKey, rowOf }: ReturnType<typeof makeFairKeys>,
  row: JobColumns,
  joined: Statement.Fragment = sql``
) => {
  const { columns, values } = rowOf(row, { fair_key: fairKey(row.account_id, sql`account.fair_weight`) })
  return sql`(${columns}) SELECT ${values} FROM account ${joined} WHERE set_config(${COUNTED_JOB_SETTING}, ${row.id}, true) IS NOT NULL`
}

/**
 * The queued submits on PostgreSQL (no hand-off; see makeSubmitStatements), each written once
 * from its fragments and compiled once (compiledOnce.ts): the plain one, chargingPg's charge and
 * the job's counted insert; the gated one, the same behind the gate's call. `built` writes each
 * as its fragments do, for the test that holds the compiled statements to them.
 */
export const makeQueuedSubmitsPg = (ctx: JobSql, wakesClaimers: boolean) => {
  const { sql, t } = ctx
  const { chargingDistinctPg, chargingEachPg, chargingPg } = makeChargeStatements(ctx)
  const fairKeys = makeFairKeys(ctx)
  // With `wakesClaimers`, each statement NOTIFYs the store's claimers, delivered as it commits:
  // once for all its jobs (a CTE of a volatile call is evaluated once), joined to the rows it
  // inserts (a statement that inserts none may still wake them for nothing, which costs a claim
  // that finds nothing). Only batched submits: one statement of a process is in flight at a time,
  // so none waits on the notify lock another holds through its flush ("NOTIFY after the submit").
  const notifying = wakesClaimers ? sql`notified AS (SELECT pg_notify(${jobsChannel(t.prefix)}, 'jobs')),` : sql``
  const notified = wakesClaimers ? sql`CROSS JOIN notified` : sql``

  /** A plain submit alone: chargingPg's charge and the job's counted insert, its values bound as parameters. */
  const plain = ({ charge, maxConcurrentJobs, row }: SubmitBinds) =>
    sql`WITH ${notifying} ${chargingPg(charge, sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs}`, true)}
      INSERT INTO ${t.jobs} ${countedFromAccount(sql, fairKeys, row, notified)} RETURNING fair_key`

  /**
   * A batch's job rows (`r`, from their JSON) as inserted: each id through its counted `set_config`
   * (the insert trigger skips it, migration 0021), the fair key as `fairKey` computes it.
   */
  const insertedValues = (columns: ReadonlyArray<string>, fairKey: Statement.Fragment) =>
    sql.csv(columns.map((column) =>
      column === "id"
        ? sql`set_config(${COUNTED_JOB_SETTING}, r.id, true)`
        : column === "fair_key"
        ? fairKey
        : sql`r.${sql.literal(column)}`
    ))

  /**
   * The plain submits of a batch (statementBatches.ts) in one statement: chargingEachPg charges
   * each submit's account or refuses it as it would be alone, and the jobs of the charged ones are
   * inserted, each counted by its account's charge (the insert trigger skips it, migration 0021:
   * the id's `set_config` runs as that row is made, just before it is written and the trigger's
   * WHEN reads it). The k-th job of an account gets the key it would after the k - 1 before it
   * (fairKeyOf steps from the account's last pending key; the statement cannot see its own
   * inserts). Its rows answer the jobs inserted with their fair keys, and with a null key the
   * submits not decided (chargingEachPg's `considered`). The submits and the jobs' rows come as
   * two JSON arrays, so the text is one for every batch and compiled once.
   */
  const eachStatement = (columns: ReadonlyArray<string>) => ({ rows, submitted }: EachBinds) =>
    sql`WITH ${notifying} submitted AS (
        SELECT * FROM jsonb_to_recordset(${submitted}::jsonb) AS s(${sql.literal(SUBMITTED_COLUMNS)})
      ), ${chargingEachPg(sql`submitted`)}, inserted AS (
        INSERT INTO ${t.jobs} (${sql.literal(columns.join(", "))})
        SELECT ${
      insertedValues(
        columns,
        sql`${fairKeys.fairKey(sql`r.account_id`, sql`j.fair_weight`)} + (j.k - 1) * (${sql.literal(String(FAIR_STEP_UNIT))} / j.fair_weight)`
      )
    }
        FROM jsonb_populate_recordset(NULL::${t.jobs}, ${rows}::jsonb) r JOIN judged j ON j.job_id = r.id AND j.admitted
        JOIN account ON account.id = j.account_id ${notified}
        RETURNING id, fair_key
      )
      SELECT id, fair_key FROM inserted UNION ALL SELECT job_id, NULL FROM judged WHERE NOT considered`
  /**
   * A batch of distinct accounts' submits in one statement: chargingDistinctPg charges each one's
   * account or refuses it, and the charged ones' jobs are inserted as eachStatement inserts them,
   * each with its account's fair key. Every submit is decided. A batch without two submits of one
   * account takes it: it costs the database less than eachStatement's ranking.
   */
  const distinctStatement = (columns: ReadonlyArray<string>) => ({ rows, submitted }: EachBinds) =>
    sql`WITH ${notifying} submitted AS (
        SELECT * FROM jsonb_to_recordset(${submitted}::jsonb) AS s(${sql.literal(SUBMITTED_COLUMNS)})
      ), ${chargingDistinctPg(sql`submitted`)}
      INSERT INTO ${t.jobs} (${sql.literal(columns.join(", "))})
      SELECT ${insertedValues(columns, fairKeys.fairKey(sql`r.account_id`, sql`account.fair_weight`))}
      FROM jsonb_populate_recordset(NULL::${t.jobs}, ${rows}::jsonb) r JOIN account ON account.job_id = r.id ${notified}
      RETURNING id, fair_key`
  type EachOnce = (binds: EachBinds) => Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError.SqlError>
  /** Compiled at the first batch of their kind, their columns those of its first job's row (every row has the same). */
  let eachOnce: EachOnce | undefined
  let distinctOnce: EachOnce | undefined
  /**
   * Each submit's job as stored, or none where its charge refused it; in the order given. The
   * submits the statement did not decide are written again, in a statement of their own: at
   * least one more of each account is decided by each statement.
   */
  const each = (submits: ReadonlyArray<PlainSubmit>): Effect.Effect<ReadonlyArray<Option.Option<Job>>, SqlError.SqlError | Schema.SchemaError> => {
    const rows = submits.map(({ job }) => jobRow(job))
    const distinct = new Set(submits.map(({ job }) => job.accountId)).size === submits.length
    const statement = distinct
      ? (distinctOnce ??= compiledOnce<EachBinds>(sql, distinctStatement(Object.keys(rows[0]!))))
      : (eachOnce ??= compiledOnce<EachBinds>(sql, eachStatement(Object.keys(rows[0]!))))
    const submitted = submits.map(({ job, maxConcurrentJobs }, seq) => submittedRow(seq, chargeBinds(chargeOf(job)), maxConcurrentJobs))
    return statement({ submitted: JSON.stringify(submitted), rows: JSON.stringify(rows) }).pipe(
      Effect.flatMap(decodeStored),
      Effect.flatMap((stored) => {
        const fairKeyOf = new Map(stored.map((row) => [row.id, row.fair_key]))
        const undecided = submits.filter(({ job }) => fairKeyOf.get(job.id) === null)
        return Effect.map(undecided.length === 0 ? Effect.succeed([]) : each(undecided), (again) => {
          const againOf = new Map(undecided.map(({ job }, i) => [job.id, again[i]!]))
          return submits.map(({ job }) => {
            const fairKey = fairKeyOf.get(job.id)
            return fairKey === null
              ? againOf.get(job.id)!
              : fairKey === undefined
              ? Option.none()
              : Option.some({ ...job, fairKey })
          })
        })
      })
    )
  }

  const gateCall = (b: GateBinds) =>
    sql`${sql(submitGateName(t.prefix))}(
      p_account_id => ${b.accountId}, p_key_id => ${b.keyId}, p_model => ${b.model},
      p_version => ${b.version}, p_now => ${b.now}, p_job_id => ${b.jobId},
      p_idempotency_key => ${b.idempotencyKey}::text, p_request_hash => ${b.requestHash}::text,
      p_not_before => ${b.notBefore}::bigint,
      p_minute_ms => ${b.minuteMs}::bigint, p_minute_bucket => ${b.minuteBucket}::bigint,
      p_minute_most => ${b.minuteMost}::bigint,
      p_day_ms => ${b.dayMs}::bigint, p_day_bucket => ${b.dayBucket}::bigint,
      p_day_most => ${b.dayMost}::bigint,
      p_account_since => ${b.accountSince}::bigint, p_account_most => ${b.accountMost}::bigint,
      p_key_since => ${b.keySince}::bigint, p_key_most => ${b.keyMost}::bigint
    )`
  const declined = sql`${sql(submitDeclinedName(t.prefix))}()`
  /** The gate's charge: admitted by the account's bound and by the gate. */
  const gatedCharging = (charge: ChargeBinds, maxConcurrentJobs: number, countsItsJob: boolean) =>
    chargingPg(charge, sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs} AND (SELECT gate_admitted FROM gate)`, countsItsJob)

  const gated = ({ charge, gate, maxConcurrentJobs, row }: GatedBinds) =>
    sql`WITH gate AS (SELECT * FROM ${gateCall(gate)}), ${gatedCharging(charge, maxConcurrentJobs, true)}, inserted AS (
        INSERT INTO ${t.jobs} ${countedFromAccount(sql, fairKeys, row)} RETURNING id, fair_key
      )
      SELECT gate.*, inserted.id AS queued_id, inserted.fair_key AS queued_fair_key,
        NULL::bigint AS taken_lease_expires_at, NULL::bigint AS taken_fair_key,
        CASE WHEN gate.gate_admitted AND inserted.id IS NULL THEN ${declined} END AS declined,
        previous.*
      FROM gate LEFT JOIN inserted ON true LEFT JOIN LATERAL (SELECT * FROM ${t.jobs} WHERE id = gate.gate_job_id) previous ON true`

  const plainOnce = compiledOnce<SubmitBinds, { readonly fair_key: unknown }>(sql, plain)
  const gatedOnce = compiledOnce<GatedBinds>(sql, gated)
  return {
    built: {
      plain: (job: Job, maxConcurrentJobs: number) => plain(submitBinds(job, maxConcurrentJobs)),
      gated: (job: Job, maxConcurrentJobs: number, gates: SubmitGates) => gated(gatedBinds(job, maxConcurrentJobs, gates))
    },
    plain: (job: Job, maxConcurrentJobs: number) => plainOnce(submitBinds(job, maxConcurrentJobs)),
    each,
    gated: (job: Job, maxConcurrentJobs: number, gates: SubmitGates) => gatedOnce(gatedBinds(job, maxConcurrentJobs, gates)),
    gateCall,
    gatedCharging,
    declined
  }
}

/** The channel PgJobSignal listens on: the table prefix keeps engines sharing a database apart. */
export const jobsChannel = (prefix: string) => `${prefix}jobs`

/**
 * Inserting a job, and a whole submit (charge and insert) in one atomic write. With
 * `wakesClaimers` (PostgreSQL with the store as the queue), the batched plain submits' statements
 * NOTIFY the store's claimers as they commit (makeQueuedSubmitsPg, `submitWakesClaimers`). No other
 * statement here does: for their queued jobs the caller wakes the claimers once they are stored
 * (JobSignal, PgJobSignal.ts), since a statement that notifies holds PostgreSQL's cluster-wide
 * notify lock through its commit's WAL flush, and those run in parallel would commit one flush at
 * a time.
 */
export const makeSubmitStatements = (ctx: JobSql, wakesClaimers: boolean) => {
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

  const queuedPg = makeQueuedSubmitsPg(ctx, wakesClaimers)

  const submit: JobStoreDriver["submit"] = sql.onDialectOrElse({
    /**
     * One statement, so one round trip and no transaction around it: the charge of chargingPg,
     * admitted only while the account's active jobs stay under its maximum, and the job's
     * insert, which counts itself active (trigger), queued or handed off as insertJob does.
     */
    pg: () => {
      const batched = makeStatementBatches<PlainSubmit, Option.Option<Job>, StoreError>({
        // One submit alone takes the statement of one: its typed parameters cost the database less than the batch's JSON.
        writeAll: (submits) =>
          (submits.length === 1
            ? Effect.map(queuedPg.plain(submits[0]!.job, submits[0]!.maxConcurrentJobs).pipe(Effect.flatMap(withFairKey(submits[0]!.job))), (job) => [job])
            : queuedPg.each(submits)).pipe(storeErrors("submit job")),
        enclosing: sql.transactionService,
        // A request's submit waits for a batch within its store wait, as it waits for a connection.
        shed: (boundMs) => Effect.fail(shedBeforeStore(boundMs)).pipe(storeErrors("submit job"))
      })
      return (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined) =>
      (handOff === undefined
        ? batched({ job, maxConcurrentJobs })
        : sql`WITH ${chargingPg(chargeBinds(chargeOf(job)), sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs}`, false)}, ${
          offeredInserts(job, handOff, sql`account,`)
        }
            SELECT queued.id AS queued_id, queued.fair_key AS queued_fair_key, taken.lease_expires_at, taken.fair_key AS taken_fair_key
            FROM account, runnable LEFT JOIN queued ON true LEFT JOIN taken ON true`.pipe(
            Effect.flatMap(offeredJob(job, handOff))
          )).pipe(storeErrors("submit job"))
    },
    /**
     * SQLite's statements are local calls: the charge and the insert in one transaction, shared
     * with the submits that wait for the writer meanwhile (transactionBatches.ts). A queued job's
     * fair key is read by the charge from the account's row it writes (one writer: nothing
     * waiting changes before the insert), so the insert is a plain row, as before fair keys.
     */
    orElse: () => {
      const written = makeTransactionBatches<SubmitWrite, Option.Option<Job>, StoreError>((effect) =>
        sql.withTransaction(effect).pipe(storeErrors("submit job")), ({ handOff, job, maxConcurrentJobs }) =>
        Effect.gen(function*() {
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
        }).pipe(storeErrors("submit job")), sql.transactionService)
      return (job: Job, maxConcurrentJobs: number, handOff: HandOffLease | undefined) => written({ job, maxConcurrentJobs, handOff })
    }
  })

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
      const { declined, gateCall, gatedCharging } = queuedPg
      const written = handOff === undefined
        ? queuedPg.gated(job, maxConcurrentJobs, gates)
        : sql`WITH gate AS (SELECT * FROM ${gateCall(gateBinds(job, gates))}), ${
          gatedCharging(chargeBinds(chargeOf(job)), maxConcurrentJobs, false)
        }, ${offeredInserts(job, handOff, sql`account,`)}
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

  return { insertJob, submit, submitGated, submitWakesClaimers: wakesClaimers }
}
