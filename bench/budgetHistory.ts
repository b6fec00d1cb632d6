/**
 * budget_history_{pg,sqlite}: a submit held to an account's `total` budget and its key's `month`
 * budget, through the engine's JobRepo, for an account with a year of spend behind it (3 keys x
 * 5 models x 8,760 hours of rollups, written as the engine writes them) against the same submit
 * for an account with none, alternately, one at a time: p50 ms per submit. The budgets' reads
 * are what differs: the daily totals (migration 0025) keep them to a row per key and day of the
 * period; before it a `total` budget summed every hourly rollup since the first (131,400 rows
 * here), under the account's lock.
 */
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { layerPostgres } from "../adapters/sql/postgres.js"
import { layerSqlite } from "../adapters/sql/sqlite.js"
import type { ApiKeyId } from "../src/domain/ids.js"
import { JobRepo } from "../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS } from "../test/conformance/fixtures.js"
import { connect, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"

const HOURS = 8_760
const SUBMITS = 400
const WARMUP = 50
const KEY = "key_1" as ApiKeyId

/** A year of hourly rollups before `now` for `accountId`: one row per key, model and hour. */
const historySql = (accountId: string, now: number) => {
  const first = Math.floor(now / 3_600_000) * 3_600_000 - HOURS * 3_600_000
  return `WITH RECURSIVE hours(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM hours WHERE n < ${HOURS - 1}),
      keys(k) AS (VALUES ('key_1'), ('key_2'), ('key_3')),
      models(m) AS (VALUES ('demo/a'), ('demo/b'), ('demo/c'), ('demo/d'), ('demo/e'))
    INSERT INTO genjobs_spend_hourly
      (account_id, key_id, model, hour, charged_micro_cents, refunded_micro_cents, jobs, failed, cancelled)
    SELECT '${accountId}', k, m, ${first} + CAST(n AS BIGINT) * 3600000, 100, 0, 1, 0, 0 FROM hours, keys, models`
}

const p50 = (values: Array<number>) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!

const measure = async (store: string, layer: Layer.Layer<JobRepo | Layer.Success<ReturnType<typeof layerSqlite>>, unknown>, seed: (sql: string) => Promise<void>) => {
  const runtime = ManagedRuntime.make(layer)
  try {
    const [withHistory, fresh] = await runtime.runPromise(Effect.all([
      createAccount(1_000_000_000_000, { maxConcurrentJobs: 1_000_000 }),
      createAccount(1_000_000_000_000, { maxConcurrentJobs: 1_000_000 })
    ]))
    const started = performance.now()
    await seed(historySql(withHistory.id, Date.now()))
    log(`budget_history ${store}: ${HOURS * 15} rollups written in ${Math.round(performance.now() - started)} ms`)
    const submit = (accountId: typeof fresh.id) =>
      runtime.runPromise(Effect.flatMap(JobRepo, (repo) =>
        repo.submit({
          job: job(accountId, { apiKeyId: KEY, costMicroCents: 100, createdAt: Date.now() }),
          maxConcurrentJobs: 1_000_000,
          rateLimits: NO_LIMITS,
          budgets: [
            { scope: "account", budget: { limitMicroCents: 1_000_000_000_000, period: "total" } },
            { scope: "key", budget: { limitMicroCents: 1_000_000_000_000, period: "month" } }
          ]
        })))
    const times = { history: [] as Array<number>, fresh: [] as Array<number> }
    for (let i = 0; i < WARMUP + SUBMITS; i++) {
      for (const [which, account] of [["history", withHistory], ["fresh", fresh]] as const) {
        const at = performance.now()
        const outcome = await submit(account.id)
        if (outcome._tag !== "Created") throw new Error(`a bench submit was ${outcome._tag}`)
        if (i >= WARMUP) times[which].push(performance.now() - at)
      }
    }
    const history = p50(times.history)
    const reference = p50(times.fresh)
    emit({
      figure: `budget_history_${store}`,
      engine: Math.round(history * 1000) / 1000,
      reference: Math.round(reference * 1000) / 1000,
      unit: "ms per submit (p50)",
      better: "lower",
      referenceIs: "the same budgeted submit for an account with no spend behind it, alternated",
      target: "<= 1.25x",
      params: { submits: SUBMITS, rollupsBehind: HOURS * 15, budgets: "account total, key month" }
    })
  } finally {
    await runtime.dispose()
  }
}

export const budgetHistory = async () => {
  await withDatabase("budget", async (url, name) => {
    const client = await connect(name)
    try {
      await measure("pg", layerPostgres({ url: Redacted.make(url), databaseClock: false }), async (sql) => {
        // Without the rollups' triggers, then the daily totals as migration 0025 copies them: a
        // year of rollups of one account in one statement would move its total row 43,800 times
        // in one transaction, each update walking past the versions before it (two minutes).
        await client.query("SET session_replication_role = replica")
        await client.query(sql)
        await client.query("SET session_replication_role = origin")
        const { rows } = await client.query<{ daily: boolean }>("SELECT to_regclass('genjobs_spend_daily') IS NOT NULL AS daily")
        if (rows[0]?.daily === true) {
          await client.query(`INSERT INTO genjobs_spend_daily (account_id, key_id, day, net_micro_cents)
            SELECT account_id, key_id, hour - hour % 86400000, SUM(charged_micro_cents - refunded_micro_cents)
            FROM genjobs_spend_hourly GROUP BY 1, 2, 3
            UNION ALL SELECT account_id, key_id, -1, SUM(charged_micro_cents - refunded_micro_cents) FROM genjobs_spend_hourly GROUP BY 1, 2
            ON CONFLICT (account_id, day, key_id) DO UPDATE SET net_micro_cents = excluded.net_micro_cents`)
        }
        await client.query("ANALYZE")
      })
    } finally {
      await client.end()
    }
  })
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-budget-"))
  try {
    const filename = join(dir, "budget.db")
    await measure("sqlite", layerSqlite({ filename }), async (sql) => {
      const db = new DatabaseSync(filename)
      try {
        db.exec("PRAGMA busy_timeout = 10000")
        db.exec(sql)
      } finally {
        db.close()
      }
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
