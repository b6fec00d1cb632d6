/**
 * webhook_claim_{sqlite,pg}: one webhook dispatcher's claim (`WebhookDeliveryRepo.claimDue`, what
 * every delivery costs before its attempt) beside a backlog, p50 ms, through the engine's store on
 * SQLite and on PostgreSQL. The backlog is BENCH_WEBHOOK_BACKLOG (100,000) due deliveries of one
 * account, 4 of them in flight (its cap, `webhookDeliveriesPerAccount`), and one delivery of a
 * second account due last: the claim must find that one past the first account's, the longest
 * path a claim takes. Each claim's lease is given back before the next, so every sample claims
 * from the same rows. The reference is the same claim beside 100 due deliveries of the same
 * shape: a claim that read or sorted the backlog cost 36-151 ms beside 100,000 (docs/decisions.md,
 * "A webhook claim reads its pick, not the backlog"). Rows are written straight to the store's
 * tables, their jobs not there (foreign keys not checked): the claim reads deliveries only.
 *
 * webhook_claim_pg_stale_stats: the same claim beside the same backlog on PostgreSQL, the table's
 * statistics taken while those deliveries were all sent (then made due, autovacuum off): a
 * backlog that built since the last ANALYZE, as after a receiver's outage. With the status in the
 * claim's indexes such statistics made a claim read every pending delivery (migration 0024).
 *
 * webhook_claim_{sqlite,pg}_waiting_accounts: a dispatcher's claim of 16 through a backlog of 8
 * accounts (500 due deliveries each, at most 4 in flight each), beside BENCH_WEBHOOK_WAITING_ACCOUNTS
 * (5,000) accounts whose one pending delivery is a retry due an hour later (receivers that are
 * down), against the same claim beside none. Each claim's leases are given back before the next.
 * A claim that goes through every account with a pending delivery, due or not, grows with them
 * (docs/decisions.md, "Webhook claims beside accounts whose deliveries wait for a retry").
 */
import { Effect, type Layer, Redacted } from "effect"
import { type Engine, type StorePorts, WebhookDeliveryRepo } from "genjobs"
import { postgresStore } from "genjobs/postgres"
import { sqliteStore } from "genjobs/sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { benchEngine, seed, TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, withDatabase } from "./lib/pg.js"
import { emit, log, ms, percentile } from "./lib/report.js"

const SMALL = 100
const IN_FLIGHT = 4
const WARMUP = 5
const SAMPLES = 20
const T0 = 1_700_000_000_000
const DELIVERIES = `${TABLE_PREFIX}webhook_deliveries`

/** Runs one statement with positional parameters on the bench's own connection to the store. */
type Exec = (text: string, params: ReadonlyArray<string | number>) => Promise<void>

const engineOn = (store: Layer.Layer<StorePorts, unknown>) => benchEngine(store, { workers: 0 })

/** `due` deliveries of `busy`, the first IN_FLIGHT leased, and one of `idle` due after them; the claims' time. */
const fill = async (exec: Exec, busy: string, idle: string, due: number, offset: number) => {
  await exec(
    `INSERT INTO ${DELIVERIES} (id, job_id, account_id, url, payload, status, attempts, next_attempt_at, lease_owner, lease_expires_at, created_at)
      SELECT 'whd_' || (n + $1), 'job_' || (n + $1), $2, 'https://hooks.bench.invalid/h', '{}', 'pending', '[]', $3 + n,
        CASE WHEN n < $4 THEN 'bench' END, CASE WHEN n < $4 THEN $5 END, $3
      FROM (WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < $6) SELECT n FROM g) AS s`,
    [offset, busy, T0, IN_FLIGHT, T0 + 100 * due, due - 1]
  )
  await exec(
    `INSERT INTO ${DELIVERIES} (id, job_id, account_id, url, payload, status, attempts, next_attempt_at, created_at)
      VALUES ('whd_last_' || $1, 'job_last_' || $1, $2, 'https://hooks.bench.invalid/h', '{}', 'pending', '[]', $3, $3)`,
    [offset, idle, T0 + due]
  )
  return T0 + due + 1
}

/**
 * The backlog of `fill`, analyzed while every delivery was sent (`exec` analyzes after each
 * INSERT), then made due as `fill` makes it, the statistics left as they were.
 */
const fillStale = async (exec: Exec, busy: string, idle: string, due: number) => {
  await exec(`ALTER TABLE ${DELIVERIES} SET (autovacuum_enabled = false)`, [])
  await exec(
    `INSERT INTO ${DELIVERIES} (id, job_id, account_id, url, payload, status, attempts, created_at)
      SELECT 'whd_' || n, 'job_' || n, CASE WHEN n < $1 THEN $2 ELSE $3 END, 'https://hooks.bench.invalid/h', '{}', 'sent', '[]', $4
      FROM (WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < $1) SELECT n FROM g) AS s`,
    [due, busy, idle, T0]
  )
  await exec(
    `UPDATE ${DELIVERIES} SET status = 'pending', next_attempt_at = $1 + substr(id, 5)::bigint,
      lease_owner = CASE WHEN substr(id, 5)::bigint < $2 THEN 'bench' END,
      lease_expires_at = CASE WHEN substr(id, 5)::bigint < $2 THEN $3 END`,
    [T0, IN_FLIGHT, T0 + 100 * due]
  )
  return T0 + due + 1
}

const BUSY_ACCOUNTS = 8
const BUSY_DUE = 500
const WALK_LIMIT = 16
const RETRY_LATER_MS = 3_600_000

/** BUSY_ACCOUNTS accounts of BUSY_DUE due deliveries each, interleaved in due order; the claims' time. */
const fillBusy = async (exec: Exec) => {
  for (let a = 0; a < BUSY_ACCOUNTS; a++) {
    await exec(
      `INSERT INTO ${DELIVERIES} (id, job_id, account_id, url, payload, status, attempts, next_attempt_at, created_at)
        SELECT 'whd_busy_${a}_' || n, 'job_busy_${a}_' || n, $1, 'https://hooks.bench.invalid/h', '{}', 'pending', '[]', $2 + n * $3 + $4, $2
        FROM (WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < $5) SELECT n FROM g) AS s`,
      [`acc_busy_${a}`, T0, BUSY_ACCOUNTS, a, BUSY_DUE - 1]
    )
  }
  return T0 + BUSY_ACCOUNTS * BUSY_DUE
}

/** A delivery's attempts after its receiver answered 500 once. */
const FAILED_ONCE = JSON.stringify([{ attempt: 1, at: T0, statusCode: 500, error: "HTTP 500", durationMs: 1, responseBody: "" }])

/**
 * `accounts` accounts, each with one pending delivery whose retry is due RETRY_LATER_MS after
 * `now`, as an attempt's record leaves it (marked as waiting for its retry, migration 0027).
 */
const fillWaiting = (exec: Exec, accounts: number, now: number) =>
  exec(
    `INSERT INTO ${DELIVERIES} (id, job_id, account_id, url, payload, status, attempts, next_attempt_at, retry_waiting, created_at)
      SELECT 'whd_wait_' || n, 'job_wait_' || n, 'acc_wait_' || n, 'https://hooks.bench.invalid/h', '{}', 'pending', $1, $2, 1, $3
      FROM (WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < $4) SELECT n FROM g) AS s`,
    [FAILED_ONCE, now + RETRY_LATER_MS, T0, accounts - 1]
  )

/** The claims through the busy accounts' backlog alone, then beside the waiting accounts, in one engine on one store. */
const measureWaiting = async (engine: Engine, exec: Exec) => {
  const now = await fillBusy(exec)
  const alone = await timeClaims(engine, exec, now, WALK_LIMIT)
  await fillWaiting(exec, settings.webhookWaitingAccounts, now)
  return { small: alone, large: await timeClaims(engine, exec, now, WALK_LIMIT) }
}

/** What the waiting-accounts figure compares (report). */
const WAITING_SHAPE = {
  suffix: "_waiting_accounts",
  referenceIs: `the same claim of ${WALK_LIMIT} through ${BUSY_ACCOUNTS} accounts' due backlog, no account waiting`,
  target: "<= 2x: a claim costs the same beside any number of accounts waiting for a retry",
  params: { waitingAccounts: settings.webhookWaitingAccounts, busyAccounts: BUSY_ACCOUNTS, dueEach: BUSY_DUE, limit: WALK_LIMIT, samples: SAMPLES }
}

/** p50 ms of a claim of `limit` at `now`, its leases given back before the next. */
const timeClaims = async (engine: Engine, exec: Exec, now: number, limit = 1) => {
  const samples: Array<number> = []
  for (let i = 0; i < WARMUP + SAMPLES; i++) {
    const start = performance.now()
    const claimed = await engine.run(Effect.flatMap(WebhookDeliveryRepo, (deliveries) =>
      deliveries.claimDue({ workerId: "bench-claim", now, leaseMs: 30_000, maxPerAccount: IN_FLIGHT, limit })))
    const elapsed = performance.now() - start
    if (claimed.length !== limit) throw new Error(`webhook_claim: a claim took ${claimed.length} of ${limit}`)
    await exec(`UPDATE ${DELIVERIES} SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = $1`, ["bench-claim"])
    if (i >= WARMUP) samples.push(elapsed)
  }
  return percentile(samples, 50)
}

/** The reference (SMALL due) and then the figure (the backlog), in one engine on one store. */
const measure = async (engine: Engine, exec: Exec) => {
  const [busy, idle] = (await seed(engine, 2)).map((caller) => caller.account.id)
  const small = await timeClaims(engine, exec, await fill(exec, busy!, idle!, SMALL, 0))
  await exec(`DELETE FROM ${DELIVERIES}`, [])
  const large = await timeClaims(engine, exec, await fill(exec, busy!, idle!, settings.webhookBacklog, 0))
  return { small, large, busy: busy!, idle: idle! }
}

/** What the backlog figures compare: a claim beside the backlog against one beside SMALL. */
const BACKLOG_SHAPE = {
  suffix: "",
  referenceIs: `the same claim beside ${SMALL} due deliveries`,
  target: "<= 2x: a claim costs the same beside any backlog",
  params: { backlog: settings.webhookBacklog, inFlight: IN_FLIGHT, samples: SAMPLES }
}

const report = (
  store: string,
  { large, small }: { readonly small: number; readonly large: number },
  { params, referenceIs, suffix, target }: typeof BACKLOG_SHAPE | typeof WAITING_SHAPE = BACKLOG_SHAPE
) =>
  emit({ figure: `webhook_claim_${store}${suffix}`, engine: ms(large), reference: ms(small), unit: "ms", better: "lower", referenceIs, target, params })

const sqlite = async () => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-webhook-claim-"))
  const filename = join(dir, "bench.db")
  const engine = await engineOn(sqliteStore({ filename, tablePrefix: TABLE_PREFIX }))
  // Its own connection, foreign keys not checked (node:sqlite checks them by default).
  const db = new DatabaseSync(filename, { enableForeignKeyConstraints: false })
  try {
    // `$n` as SQLite numbers them (?NNN), whole numbers bound as integers.
    const exec: Exec = async (text, params) =>
      void db.prepare(text.replace(/\$(\d+)/g, "?$1")).run(...params.map((p) => (typeof p === "number" ? BigInt(p) : p)))
    report("sqlite", await measure(engine, exec))
    await exec(`DELETE FROM ${DELIVERIES}`, [])
    report("sqlite", await measureWaiting(engine, exec), WAITING_SHAPE)
  } finally {
    db.close()
    await engine.dispose()
    rmSync(dir, { recursive: true, force: true })
  }
}

const postgres = () =>
  withDatabase("webhook_claim", async (url, name) => {
    const engine = await engineOn(postgresStore({ url: Redacted.make(url), tablePrefix: TABLE_PREFIX }))
    const client = await connect(name)
    try {
      await client.query("SET session_replication_role = replica")
      const exec: Exec = async (text, params) => {
        await client.query(text.replace(/\$(\d+)/g, (_, n) => `$${n}${typeof params[Number(n) - 1] === "number" ? "::bigint" : "::text"}`), [...params])
        if (text.startsWith("INSERT")) await client.query(`ANALYZE ${DELIVERIES}`)
      }
      const measured = await measure(engine, exec)
      report("pg", measured)
      await exec(`DELETE FROM ${DELIVERIES}`, [])
      const stale = await timeClaims(engine, exec, await fillStale(exec, measured.busy, measured.idle, settings.webhookBacklog))
      report("pg_stale_stats", { small: measured.small, large: stale })
      await exec(`ALTER TABLE ${DELIVERIES} SET (autovacuum_enabled = true)`, [])
      await exec(`DELETE FROM ${DELIVERIES}`, [])
      report("pg", await measureWaiting(engine, exec), WAITING_SHAPE)
    } finally {
      await client.end()
      await engine.dispose()
    }
  })

export const webhookClaim = async () => {
  log(`webhook_claim: SQLite, ${SMALL} then ${settings.webhookBacklog} due deliveries`)
  await sqlite()
  log(`webhook_claim: PostgreSQL, ${SMALL} then ${settings.webhookBacklog} due deliveries`)
  await postgres()
}
