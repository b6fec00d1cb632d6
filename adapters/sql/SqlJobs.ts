import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { type JobId, newLedgerEntryId } from "../../src/domain/ids.js"
import { type ClaimLease, claimedJob, type Job } from "../../src/domain/job.js"
import type { VersionRef } from "../../src/domain/providerLimits.js"
import { bucketOf, MINUTE_MS, MINUTE_WINDOW, type WindowUsage } from "../../src/domain/rateLimit.js"
import type { HandOffLease } from "../../src/ports/JobRepo.js"
import type { ClaimBatch, IdempotencyRecord, JobStoreDriver } from "../../src/ports/JobStoreDriver.js"
import { readActiveJobs } from "./activeJobs.js"
import { postLedger } from "./ledger.js"
import { SqlTables } from "./tables.js"
import { AccountRow, DbInt, JobRow, storeErrors, toAccount, toJob } from "./rows.js"

const decodeJobs = Schema.decodeUnknown(Schema.Array(JobRow))
const decodeAccounts = Schema.decodeUnknown(Schema.Array(AccountRow))
const decodeWindows = Schema.decodeUnknown(Schema.Array(Schema.Struct({ window_ms: DbInt, n: DbInt, oldest: DbInt })))
const decodeIds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.String })))
const decodeUsage = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ kind: Schema.Literal("flight", "starts"), a: Schema.String, b: Schema.String, n: DbInt }))
)
const decodeSubmitted = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ queued_id: Schema.NullOr(Schema.String), lease_expires_at: Schema.NullOr(DbInt) }))
)
const decodeLeaseEnds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ lease_expires_at: Schema.NullOr(DbInt) })))
const decodeBalance = Schema.decodeUnknown(Schema.Array(Schema.Struct({ before: DbInt })))
const decodeIdempotency = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ request_hash: Schema.String, job_id: Schema.String, created_at: DbInt }))
)

const jsonOrNull = (value: unknown) => (value === null ? null : JSON.stringify(value))

const firstJob = (rows: ReadonlyArray<unknown>) =>
  decodeJobs(rows).pipe(Effect.map((jobs) => Option.map(Option.fromNullable(jobs[0]), toJob)))

const allJobs = (rows: ReadonlyArray<unknown>) => decodeJobs(rows).pipe(Effect.map((jobs) => jobs.map(toJob)))

const firstBalance = (rows: ReadonlyArray<unknown>) =>
  decodeBalance(rows).pipe(Effect.map((found) => Option.map(Option.fromNullable(found[0]), (row) => row.before)))

const jobRow = (job: Job) => ({
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
  lease_expires_at: job.leaseExpiresAt,
  provider_phase: job.providerPhase,
  provider_handle: jsonOrNull(job.providerHandle),
  provider_starts: job.providerStarts
})

/** The channel PgJobSignal listens on: the table prefix keeps engines sharing a database apart. */
export const jobsChannel = (prefix: string) => `${prefix}jobs`

export interface SqlJobDriverOptions {
  /**
   * PostgreSQL only: lease times (claims, renewals, expiry checks) from the database's clock
   * rather than the engine's, so processes whose clocks drift apart never take over a lease
   * early. Default true; false only for tests that drive time themselves.
   */
  readonly databaseClock?: boolean | undefined
}

/**
 * Job storage in SQLite or PostgreSQL, for makeJobRepo. PostgreSQL adds row locks to
 * transactions and claims with SKIP LOCKED; SQLite's single writer already serialises them.
 */
export const makeSqlJobDriver = (options: SqlJobDriverOptions = {}) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const databaseClock = isPg && (options.databaseClock ?? true)
  /** The time lease expiries are compared with: the caller's `now`, or PostgreSQL's clock in milliseconds. */
  const leaseNow = (now: number) =>
    databaseClock ? sql`(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint` : sql`${now}`
  /** A lease expiry `expiresAt - now` ahead of the lease clock. */
  const leaseUntil = (now: number, expiresAt: number) =>
    databaseClock ? sql`(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint + ${expiresAt - now}` : sql`${expiresAt}`
  const forUpdate = sql.literal(isPg ? "FOR UPDATE" : "")
  const skipLocked = sql.literal(isPg ? "FOR UPDATE SKIP LOCKED" : "")
  const channel = jobsChannel(t.prefix)

  type Charge = Parameters<JobStoreDriver["chargeAccount"]>[0]

  /**
   * The start of a charging statement on PostgreSQL: the account's ended jobs are taken out of
   * `active_job_ends` (rows another statement is taking are skipped, so this never waits on
   * them), then the account is charged, and the ends folded into `active_jobs`, only when the
   * balance covers the cost and `admits` holds; refused, the ends go back. The charge's ledger
   * line is written when there is a cost. `account` answers the balance before the charge.
   *
   * Ends written after the statement began are not seen, so `a.active_jobs - folded.n` can only
   * count too many active jobs, never too few. Nothing waits for an account's lock while holding
   * ends, so the two locks never deadlock.
   */
  const chargingPg = (accountId: string, jobId: JobId, costMicroCents: number, now: number, admits: Statement.Fragment) =>
    sql`ended AS (
        DELETE FROM ${t.active_job_ends} WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM ${t.active_job_ends} WHERE account_id = ${accountId} FOR UPDATE SKIP LOCKED
        )) RETURNING account_id
      ), folded AS (
        SELECT COUNT(*) AS n FROM ended
      ), account AS (
        UPDATE ${t.accounts} AS a SET balance_micro_cents = a.balance_micro_cents - ${costMicroCents},
          active_jobs = a.active_jobs - folded.n
        FROM folded
        WHERE a.id = ${accountId} AND a.balance_micro_cents >= ${costMicroCents} ${admits}
        RETURNING a.id, a.balance_micro_cents + ${costMicroCents} AS before
      ), restored AS (
        INSERT INTO ${t.active_job_ends} (account_id) SELECT account_id FROM ended WHERE NOT EXISTS (SELECT 1 FROM account)
      ), line AS (
        INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
        SELECT ${newLedgerEntryId(now)}, id, ${jobId}, 'charge', ${-costMicroCents}, ${now} FROM account WHERE ${costMicroCents}::bigint > 0
      )`

  /** A free job moves no money, but its charge still takes the lock that serialises the account's submits. */
  const chargePg = ({ accountId, costMicroCents, jobId, now }: Charge) =>
    sql`WITH ${chargingPg(accountId, jobId, costMicroCents, now, sql``)} SELECT before FROM account`.pipe(
      Effect.flatMap(firstBalance)
    )

  const columnsOf = (job: Job) => sql.literal(Object.keys(jobRow(job)).join(", "))
  const values = (row: ReturnType<typeof jobRow>) => sql.csv(Object.values(row).map((value) => sql`${value}`))
  /** claimedJob's row, with the lease's expiry on the lease clock as a claim writes it. */
  const claimedValues = (job: Job, lease: HandOffLease) =>
    sql.csv(Object.entries(jobRow(claimedJob(job, lease))).map(([column, value]) =>
      column === "lease_expires_at" ? leaseUntil(lease.now, lease.leaseExpiresAt) : sql`${value}`
    ))
  /** A job a claim may take over: its lease expired by `now` with attempts left. */
  const reclaimable = (now: number, maxAttempts: number) =>
    sql`status = 'processing' AND lease_expires_at <= ${leaseNow(now)} AND attempts < ${maxAttempts}`
  /** What a claim could take now: a pending job, or a reclaimable one. */
  const anyRunnable = (lease: HandOffLease) =>
    sql`(EXISTS (SELECT 1 FROM ${t.jobs} WHERE status = 'pending')
      OR EXISTS (SELECT 1 FROM ${t.jobs} WHERE ${reclaimable(lease.now, lease.maxAttempts)}))`
  /** The job as a hand-off inserted it: claimedJob's row but for the lease's end, which the lease clock set. */
  const takenAs = (job: Job, lease: HandOffLease, leaseExpiresAt: number | null): Job => ({
    ...claimedJob(job, lease),
    leaseExpiresAt
  })

  /**
   * A whole submit in one statement, so one round trip and no transaction around it: the charge
   * of chargingPg, admitted only while the account's active jobs stay under its maximum, and the
   * job's insert, which counts itself active (trigger). Queued, it wakes claimers on commit;
   * with a hand-off and nothing runnable it is inserted as the local worker's claim instead
   * (claimedJob, as claimSet writes it), and nobody else is woken.
   */
  const submitPg = (job: Job, maxConcurrentJobs: number, handOff?: HandOffLease) => {
    const admits = sql`AND a.active_jobs - folded.n < ${maxConcurrentJobs}`
    const charging = chargingPg(job.accountId, job.id, job.costMicroCents, job.createdAt, admits)
    if (handOff === undefined) {
      return sql`WITH ${charging}, inserted AS (
          INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${values(jobRow(job))} FROM account RETURNING id
        )
        SELECT pg_notify(${channel}, 'jobs') FROM inserted`.pipe(
        Effect.map((rows) => (rows.length > 0 ? Option.some(job) : Option.none())),
        storeErrors("submit job")
      )
    }
    return sql`WITH ${charging}, runnable AS (
        SELECT ${anyRunnable(handOff)} AS found
      ), queued AS (
        INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${values(jobRow(job))} FROM account, runnable WHERE runnable.found RETURNING id
      ), taken AS (
        INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${claimedValues(job, handOff)}
        FROM account, runnable WHERE NOT runnable.found RETURNING lease_expires_at
      )
      SELECT queued.id AS queued_id, taken.lease_expires_at,
        CASE WHEN queued.id IS NOT NULL THEN pg_notify(${channel}, 'jobs') END AS woke
      FROM account LEFT JOIN queued ON true LEFT JOIN taken ON true`.pipe(
      Effect.flatMap(decodeSubmitted),
      Effect.map((rows) =>
        Option.map(Option.fromNullable(rows[0]), (row) => (row.queued_id !== null ? job : takenAs(job, handOff, row.lease_expires_at)))
      ),
      storeErrors("submit job")
    )
  }

  const chargeSqlite = ({ accountId, costMicroCents, jobId, now }: Charge) =>
    sql`UPDATE ${t.accounts} SET balance_micro_cents = balance_micro_cents - ${costMicroCents}
      WHERE id = ${accountId} AND balance_micro_cents >= ${costMicroCents}
      RETURNING balance_micro_cents + ${costMicroCents} AS before`.pipe(
      Effect.flatMap(firstBalance),
      Effect.tap((before) =>
        Option.isSome(before) && costMicroCents > 0
          ? sql`INSERT INTO ${t.ledger} (id, account_id, job_id, kind, amount_micro_cents, created_at)
              VALUES (${newLedgerEntryId(now)}, ${accountId}, ${jobId}, 'charge', ${-costMicroCents}, ${now})`
          : Effect.void
      )
    )

  /**
   * claimedJob (src/domain/job.ts) in SQL: Pickup and Reclaim both lead to processing; a Pickup
   * marks the provider start begun. The right-hand sides read the row as it was.
   */
  const claimSet = (claim: ClaimLease) =>
    sql`status = 'processing', attempts = attempts + 1, started_at = COALESCE(started_at, ${claim.now}),
      lease_owner = ${claim.leaseOwner}, lease_expires_at = ${leaseUntil(claim.now, claim.leaseExpiresAt)},
      provider_phase = CASE WHEN status = 'pending' THEN 'starting' ELSE provider_phase END,
      provider_starts = CASE WHEN status = 'pending' THEN provider_starts + 1 ELSE provider_starts END`

  /** The versions as a row list, for `(model, version) IN (...)` in both dialects. */
  const versionRows = (versions: ReadonlyArray<VersionRef>) =>
    sql`VALUES ${sql.csv(versions.map((v) => sql`(${v.model}, ${v.version})`))}`

  /** `(model, version)` is none of `versions`: pending jobs of limited versions are the limited claim's. */
  const notAmong = (versions: ReadonlyArray<VersionRef>) =>
    versions.length === 0 ? sql`` : sql`AND (model, version) NOT IN (${versionRows(versions)})`

  /** A lock only limited claims take, one per table prefix. */
  const limitsLock = `${t.prefix}provider_limits`

  /**
   * Expired leases from the partial index of processing jobs by expiry, then pending jobs from
   * the partial index of pending jobs in claim order: each side reads at most `limit` index
   * entries, locking them with SKIP LOCKED, and one UPDATE writes the claim on the picked rows.
   */
  const claimPg = (claim: ClaimBatch) =>
    sql`WITH expired AS (
        SELECT id FROM ${t.jobs} WHERE ${reclaimable(claim.now, claim.maxAttempts)}
        ORDER BY lease_expires_at LIMIT ${claim.limit} FOR UPDATE SKIP LOCKED
      ), pending AS (
        SELECT id FROM ${t.jobs} WHERE status = 'pending' ${notAmong(claim.exclude)}
        ORDER BY created_at, id LIMIT ${claim.limit} FOR UPDATE SKIP LOCKED
      ), picked AS (
        (SELECT id FROM expired) UNION ALL (SELECT id FROM pending) LIMIT ${claim.limit}
      )
      UPDATE ${t.jobs} AS j SET ${claimSet(claim)}
      FROM picked WHERE j.id = picked.id RETURNING j.*`

  /** The same picks in SQLite, whose one writer already keeps parallel claims apart. */
  const claimSqlite = (claim: ClaimBatch) =>
    sql`UPDATE ${t.jobs} SET ${claimSet(claim)} WHERE id IN (
        SELECT id FROM (
          SELECT id FROM ${t.jobs} WHERE ${reclaimable(claim.now, claim.maxAttempts)}
          ORDER BY lease_expires_at LIMIT ${claim.limit}
        )
        UNION ALL
        SELECT id FROM (
          SELECT id FROM ${t.jobs} WHERE status = 'pending' ${notAmong(claim.exclude)} ORDER BY created_at, id LIMIT ${claim.limit}
        )
        LIMIT ${claim.limit}
      ) RETURNING *`

  const readIdempotency = (accountId: string, key: string) =>
    sql`SELECT request_hash, job_id, created_at FROM ${t.idempotency_keys}
      WHERE account_id = ${accountId} AND idempotency_key = ${key}`.pipe(
      Effect.flatMap(decodeIdempotency),
      Effect.map((rows) =>
        Option.map(Option.fromNullable(rows[0]), (row): IdempotencyRecord => ({
          requestHash: row.request_hash,
          jobId: row.job_id as JobId,
          createdAt: row.created_at
        }))
      )
    )

  const driver: JobStoreDriver = {
    transaction: (effect) => sql.withTransaction(effect).pipe(storeErrors("transaction")),

    lockAccount: (id) =>
      sql`SELECT * FROM ${t.accounts} WHERE id = ${id} ${forUpdate}`.pipe(
        Effect.flatMap(decodeAccounts),
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toAccount)),
        storeErrors("lock account")
      ),

    chargeAccount: (charge) => (isPg ? chargePg(charge) : chargeSqlite(charge)).pipe(storeErrors("charge account")),

    claimIdempotency: (accountId, key, { createdAt, jobId, requestHash }, notBefore) =>
      sql`INSERT INTO ${t.idempotency_keys} (account_id, idempotency_key, request_hash, job_id, created_at)
        VALUES (${accountId}, ${key}, ${requestHash}, ${jobId}, ${createdAt})
        ON CONFLICT (account_id, idempotency_key) DO UPDATE SET
          request_hash = ${requestHash}, job_id = ${jobId}, created_at = ${createdAt}
        WHERE ${t.idempotency_keys}.created_at < ${notBefore}
        RETURNING job_id`.pipe(
        // No row: a live record of the key exists (committed, or waited for) and stays.
        Effect.flatMap((saved) => (saved.length > 0 ? Effect.succeed(Option.none()) : readIdempotency(accountId, key))),
        storeErrors("claim idempotency key")
      ),

    // Read under the account's lock: no submit or fold moves the count meanwhile.
    activeJobs: (accountId) => readActiveJobs(sql, t, accountId),

    ...(isPg ? { submitAtOnce: submitPg } : {}),

    insertClaimed: (job, handOff) =>
      sql`INSERT INTO ${t.jobs} (${columnsOf(job)}) SELECT ${claimedValues(job, handOff)} WHERE NOT ${anyRunnable(handOff)}
        RETURNING lease_expires_at`.pipe(
        Effect.flatMap(decodeLeaseEnds),
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row) => takenAs(job, handOff, row.lease_expires_at))),
        storeErrors("insert claimed job")
      ),

    readRateWindows: (key, now, windows) =>
      sql`SELECT window_ms, SUM(n) AS n, MIN(oldest) AS oldest FROM ${t.rate_windows}
        WHERE account_id = ${key.accountId} AND model = ${key.model} AND version = ${key.version}
          AND window_ms IN ${sql.in(windows.map((w) => w.windowMs))} AND oldest > ${now} - window_ms
        GROUP BY window_ms`.pipe(
        Effect.flatMap(decodeWindows),
        Effect.map((rows) =>
          windows.map((window): WindowUsage => {
            const row = rows.find((r) => r.window_ms === window.windowMs)
            return row === undefined ? { count: 0, oldest: null } : { count: row.n, oldest: row.oldest }
          })
        ),
        storeErrors("read rate-limit windows")
      ),

    recordRateWindows: (key, now, windows) =>
      sql`INSERT INTO ${t.rate_windows} ${
        sql.insert(windows.map((window) => ({
          account_id: key.accountId,
          model: key.model,
          version: key.version,
          window_ms: window.windowMs,
          bucket: bucketOf(window, now),
          n: 1,
          oldest: now
        })))
      } ON CONFLICT (account_id, model, version, window_ms, bucket) DO UPDATE SET
          n = ${t.rate_windows}.n + 1,
          oldest = CASE WHEN excluded.oldest < ${t.rate_windows}.oldest THEN excluded.oldest ELSE ${t.rate_windows}.oldest END`
        .pipe(Effect.asVoid, storeErrors("count rate-limit windows")),

    // Twice the window: every job of a bucket has left it by then, whatever the bucket's width.
    pruneRateWindows: (now) =>
      sql`DELETE FROM ${t.rate_windows} WHERE bucket + 2 * window_ms <= ${now}`.pipe(
        Effect.zipRight(sql`DELETE FROM ${t.provider_starts} WHERE bucket + ${2 * MINUTE_MS} <= ${now}`),
        Effect.asVoid,
        storeErrors("prune rate-limit windows")
      ),

    // PostgreSQL: NOTIFY in the same statement, so claimers hear of the job when it commits, never before.
    insertJob: (job) =>
      (isPg
        ? sql`WITH inserted AS (INSERT INTO ${t.jobs} ${sql.insert(jobRow(job))} RETURNING id)
            SELECT pg_notify(${channel}, 'jobs') FROM inserted`
        : sql`INSERT INTO ${t.jobs} ${sql.insert(jobRow(job))}`).pipe(Effect.asVoid, storeErrors("insert job")),

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
          lease_expires_at = ${next.leaseExpiresAt},
          provider_phase = ${next.providerPhase},
          provider_handle = ${jsonOrNull(next.providerHandle)},
          provider_starts = ${next.providerStarts}
        WHERE id = ${next.id} AND status = ${expected.status} AND attempts = ${expected.attempts} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        storeErrors("update job")
      ),

    updateProviderStates: (states) =>
      (isPg
        ? sql`UPDATE ${t.jobs} AS j SET provider_phase = d.phase, provider_handle = d.handle, provider_starts = d.starts
            FROM jsonb_to_recordset(${JSON.stringify(states.map(({ id, leaseOwner, state }) => ({
            id,
            leaseOwner,
            phase: state.phase,
            handle: jsonOrNull(state.handle),
            starts: state.starts
          })))}::jsonb) AS d(id text, "leaseOwner" text, phase text, handle text, starts bigint)
            WHERE j.id = d.id AND j.status = 'processing' AND j.lease_owner = d."leaseOwner" RETURNING j.id`
        // SQLite's writes are local calls: one statement per job, in one transaction.
        : sql.withTransaction(Effect.map(
          Effect.forEach(states, ({ id, leaseOwner, state }) =>
            sql`UPDATE ${t.jobs} SET provider_phase = ${state.phase}, provider_handle = ${jsonOrNull(state.handle)},
                provider_starts = ${state.starts}
              WHERE id = ${id} AND status = 'processing' AND lease_owner = ${leaseOwner} RETURNING id`),
          (rows) => rows.flat()
        ))).pipe(
        Effect.flatMap(decodeIds),
        Effect.map((rows) => rows.map((row) => row.id as JobId)),
        storeErrors("update provider state")
      ),

    finishHeld: (endings) =>
      (isPg
        ? sql`UPDATE ${t.jobs} AS j SET status = d.status, outputs = d.outputs, error = d.error,
              completed_at = d."completedAt", lease_owner = NULL, lease_expires_at = NULL
            FROM jsonb_to_recordset(${JSON.stringify(endings.map((e) => ({
            ...e,
            outputs: jsonOrNull(e.outputs),
            error: jsonOrNull(e.error)
          })))}::jsonb) AS d(id text, "leaseOwner" text, status text, outputs text, error text, "completedAt" bigint)
            WHERE j.id = d.id AND j.status = 'processing' AND j.lease_owner = d."leaseOwner" RETURNING j.*`
        : Effect.map(
          Effect.forEach(endings, (e) =>
            sql`UPDATE ${t.jobs} SET status = ${e.status}, outputs = ${jsonOrNull(e.outputs)}, error = ${jsonOrNull(e.error)},
                completed_at = ${e.completedAt}, lease_owner = NULL, lease_expires_at = NULL
              WHERE id = ${e.id} AND status = 'processing' AND lease_owner = ${e.leaseOwner} RETURNING *`),
          (rows) => rows.flat()
        )).pipe(Effect.flatMap(allJobs), storeErrors("end held jobs")),

    postLedger: (entry) => postLedger(sql, t, entry).pipe(storeErrors("post ledger entry")),

    insertDeliveries: (deliveries) =>
      (deliveries.length === 0 ? Effect.void : sql`INSERT INTO ${t.webhook_deliveries} ${
        sql.insert(deliveries.map((delivery) => ({
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
        })))
      }`.pipe(Effect.asVoid)).pipe(storeErrors("insert webhook deliveries")),

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
      } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(Effect.flatMap(allJobs), storeErrors("list jobs")),

    claimBatch: (claim) => (isPg ? claimPg(claim) : claimSqlite(claim)).pipe(Effect.flatMap(allJobs), storeErrors("claim jobs")),

    renewLeases: (leases, now, leaseExpiresAt) =>
      (isPg
        ? sql`UPDATE ${t.jobs} AS j SET lease_expires_at = ${leaseUntil(now, leaseExpiresAt)}
            FROM jsonb_to_recordset(${JSON.stringify(leases)}::jsonb) AS held(id text, "workerId" text)
            WHERE j.id = held.id AND j.lease_owner = held."workerId" AND j.status = 'processing' RETURNING j.id`
        : sql`UPDATE ${t.jobs} SET lease_expires_at = ${leaseExpiresAt}
            WHERE status = 'processing' AND (id, lease_owner) IN (
              SELECT json_extract(value, '$.id'), json_extract(value, '$.workerId') FROM json_each(${JSON.stringify(leases)})
            ) RETURNING id`).pipe(
        Effect.flatMap(decodeIds),
        Effect.map((rows) => rows.map((row) => row.id as JobId)),
        storeErrors("renew leases")
      ),

    lockProviderLimits: isPg
      ? sql`SELECT pg_advisory_xact_lock(hashtextextended(${limitsLock}, 0))`.pipe(Effect.asVoid, storeErrors("lock provider limits"))
      // SQLite's one writer serialises transactions already.
      : Effect.void,

    readLimitUsage: (versions, scopes, now) => {
      const parts = [
        ...(versions.length === 0 ? [] : [
          sql`SELECT 'flight' AS kind, model AS a, version AS b, COUNT(*) AS n FROM ${t.jobs}
            WHERE status = 'processing' AND (model, version) IN (${versionRows(versions)}) GROUP BY model, version`
        ]),
        ...(scopes.length === 0 ? [] : [
          sql`SELECT 'starts' AS kind, scope AS a, '' AS b, SUM(n) AS n FROM ${t.provider_starts}
            WHERE scope IN ${sql.in(scopes)} AND oldest > ${now - MINUTE_MS} GROUP BY scope`
        ])
      ]
      return (parts.length === 0 ? Effect.succeed([]) : sql`${sql.join(" UNION ALL ", false)(parts)}`.pipe(Effect.flatMap(decodeUsage))).pipe(
        Effect.map((rows) => ({
          inFlight: rows.flatMap((r) => (r.kind === "flight" ? [{ model: r.a, version: r.b, count: r.n }] : [])),
          starts: rows.flatMap((r) => (r.kind === "starts" ? [{ scope: r.a, count: r.n }] : []))
        })),
        storeErrors("read provider limit usage")
      )
    },

    pendingOf: (versions) =>
      (isPg
        ? sql`SELECT j.* FROM jsonb_to_recordset(${JSON.stringify(versions)}::jsonb) AS v(model text, version text, "limit" int)
            CROSS JOIN LATERAL (
              SELECT * FROM ${t.jobs} WHERE status = 'pending' AND model = v.model AND version = v.version
              ORDER BY created_at, id LIMIT v."limit" FOR UPDATE SKIP LOCKED
            ) AS j`.pipe(Effect.flatMap(allJobs))
        : Effect.map(
          Effect.forEach(versions, (v) =>
            sql`SELECT * FROM ${t.jobs} WHERE status = 'pending' AND model = ${v.model} AND version = ${v.version}
              ORDER BY created_at, id LIMIT ${v.limit}`.pipe(Effect.flatMap(allJobs))),
          (found) => found.flat()
        )).pipe(storeErrors("read pending jobs of limited versions")),

    claimIds: (ids, claim) =>
      (ids.length === 0
        ? Effect.succeed([])
        : sql`UPDATE ${t.jobs} SET ${claimSet(claim)} WHERE id IN ${sql.in(ids)}
            AND ((status = 'pending' ${notAmong(claim.exclude)}) OR (${reclaimable(claim.now, claim.maxAttempts)})) RETURNING *`.pipe(
          Effect.flatMap(allJobs)
        )).pipe(storeErrors("claim jobs by id")),

    queueGaps: ({ after, graceMs, limit, maxAttempts, now }) =>
      Effect.all({
        pending: sql`SELECT id, created_at FROM ${t.jobs} WHERE status = 'pending' AND created_at <= ${now - graceMs}
            ${after === null ? sql`` : sql`AND (created_at, id) > (${after.createdAt}, ${after.id})`}
            ORDER BY created_at, id LIMIT ${limit}`.pipe(
          Effect.map((rows) => rows.map((row) => ({ id: row["id"] as JobId, createdAt: Number(row["created_at"]) })))
        ),
        expired: sql`SELECT id FROM ${t.jobs} WHERE status = 'processing' AND lease_expires_at + ${graceMs} <= ${leaseNow(now)}
            AND attempts < ${maxAttempts} ORDER BY lease_expires_at LIMIT ${limit}`.pipe(
          Effect.map((rows) => rows.map((row) => row["id"] as JobId))
        )
      }).pipe(storeErrors("read what the queue may have lost")),

    recordStarts: (starts, now) =>
      (starts.length === 0
        ? Effect.void
        : sql`INSERT INTO ${t.provider_starts} ${
          sql.insert(starts.map(({ count, scope }) => ({ scope, bucket: bucketOf(MINUTE_WINDOW, now), n: count, oldest: now })))
        } ON CONFLICT (scope, bucket) DO UPDATE SET
            n = ${t.provider_starts}.n + excluded.n,
            oldest = CASE WHEN excluded.oldest < ${t.provider_starts}.oldest THEN excluded.oldest ELSE ${t.provider_starts}.oldest END`
          .pipe(Effect.asVoid)).pipe(storeErrors("count provider starts")),

    ...(isPg
      ? {
        foldJobEnds: (limit: number) =>
          sql`WITH ended AS (
              DELETE FROM ${t.active_job_ends} WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM ${t.active_job_ends} LIMIT ${limit} FOR UPDATE SKIP LOCKED
              )) RETURNING account_id
            ), folded AS (
              SELECT account_id, COUNT(*) AS n FROM ended GROUP BY account_id
            )
            UPDATE ${t.accounts} AS a SET active_jobs = a.active_jobs - folded.n FROM folded WHERE a.id = folded.account_id`
            .pipe(Effect.asVoid, storeErrors("fold job ends"))
      }
      : {}),

    findExhausted: (now, maxAttempts, limit) =>
      sql`SELECT * FROM ${t.jobs} WHERE status = 'processing' AND lease_expires_at <= ${leaseNow(now)}
        AND attempts >= ${maxAttempts} ORDER BY lease_expires_at LIMIT ${limit} ${skipLocked}`.pipe(
        Effect.flatMap(allJobs),
        storeErrors("find exhausted jobs")
      ),

    takeLease: (name, owner, now, expiresAt) =>
      sql`INSERT INTO ${t.leases} (name, owner, expires_at) VALUES (${name}, ${owner}, ${expiresAt})
        ON CONFLICT (name) DO UPDATE SET owner = ${owner}, expires_at = ${expiresAt}
        WHERE ${t.leases}.owner = ${owner} OR ${t.leases}.expires_at <= ${now}
        RETURNING owner`.pipe(Effect.map((rows) => rows.length > 0), storeErrors("take lease"))
  }
  return driver
})
