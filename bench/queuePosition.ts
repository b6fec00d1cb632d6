/**
 * queue_position: what a pending job's place costs with 100,000 jobs waiting, on SQLite and
 * PostgreSQL. Each account submits one job through Jobs.submit; the rest are copies of its row
 * made in SQL, its keys one fair step apart (as its submits would have made them), so every
 * account's backlog is back to back and the places are exact. Two shapes: a few accounts with
 * long backlogs, and many accounts with short ones (a place is a pass over the groups of its
 * capacity). Figures: the refresh (the one grouped read, `AdminReadRepo.waitingSummary`) and a
 * place read from the last refresh (`QueueBook.place`, what GET /v1/jobs/{id} adds), whose
 * answer is checked against the count the shape makes. The reference is the issue's: counters,
 * never a scan per read, so a read must cost far less than the refresh it is counted from.
 */
import { Effect, type Layer, Redacted } from "effect"
import { AdminReadRepo, type Engine, type Job, JobRepo, QueueBook, type StorePorts } from "genjobs"
import { postgresStore } from "genjobs/postgres"
import { sqliteStore } from "genjobs/sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { benchEngine, seed, submit, TABLE_PREFIX } from "./lib/engine.js"
import { copyJobRows, withDatabase } from "./lib/pg.js"
import { emit, log, ms, percentile } from "./lib/report.js"

const WAITING = 100_000
const SHAPES = [{ accounts: 10 }, { accounts: 1_000 }] as const
const STEP = 1_000_000
const REFRESHES = 20
const READS = 20_000

/** An engine without workers whose queue read never goes stale while the reads are timed. */
const startEngine = (store: Layer.Layer<StorePorts, unknown>): Promise<Engine> =>
  benchEngine(store, { workers: 0, settings: { pollIntervalMs: 3_600_000 } })

/** Copies each template `copies` times in SQL, the g-th copy g fair steps after it. */
type Fill = (templates: ReadonlyArray<string>, copies: number) => Promise<void>

const measure = async (store: string, engine: Engine, fill: Fill, accounts: number) => {
  const perAccount = WAITING / accounts
  const callers = await seed(engine, accounts)
  const templates: Array<Job> = []
  for (const caller of callers) templates.push((await submit(engine, caller, "template")).job)
  log(`queue_position ${store}: ${accounts} accounts x ${perAccount} waiting jobs`)
  const fillStart = performance.now()
  await fill(templates.map((t) => t.id), perAccount - 1)
  log(`queue_position ${store}: filled in ${Math.round((performance.now() - fillStart) / 1000)} s`)

  const refreshes: Array<number> = []
  for (let i = 0; i < REFRESHES; i++) {
    const start = performance.now()
    const summary = await engine.run(Effect.flatMap(AdminReadRepo, (reads) => reads.waitingSummary))
    refreshes.push(performance.now() - start)
    const counted = summary.waiting.reduce((n, g) => n + g.count, 0)
    if (counted !== WAITING) throw new Error(`the grouped read counted ${counted} waiting jobs, not ${WAITING}`)
  }
  // The last job of the last account: every other job waits before it or ties with it.
  const last = await engine.run(Effect.flatMap(JobRepo, (jobs) => jobs.get(templates.at(-1)!.id)))
  if (last._tag === "None") throw new Error("the template is gone")
  const probe = { ...last.value, fairKey: last.value.fairKey + (perAccount - 1) * STEP }
  const place = await engine.run(Effect.flatMap(QueueBook, (book) => book.place(probe)))
  if (place?.position !== WAITING) throw new Error(`the last job's place is ${place?.position}, not ${WAITING}`)
  // The process's CPU time, not the wall clock: the reads run in it alone, and a shared
  // machine's load (other processes) would otherwise be counted in. A plain loop: Effect.repeat
  // yields to the scheduler between runs, which would be timed too.
  const cpuStart = process.cpuUsage()
  const readStart = performance.now()
  await engine.run(Effect.flatMap(QueueBook, (book) =>
    Effect.gen(function*() {
      for (let i = 0; i < READS; i++) yield* book.place(probe)
    })))
  const cpu = process.cpuUsage(cpuStart)
  const readUs = (cpu.user + cpu.system) / READS
  const params = { waiting: WAITING, accounts, perAccount, reads: READS, wallUsPerRead: Math.round(((performance.now() - readStart) * 1000) / READS) }
  emit({
    figure: `queue_position_read_${store}_${accounts}_accounts`,
    engine: readUs,
    reference: percentile(refreshes, 50) * 1000,
    unit: "µs of CPU per place read (the reference: one refresh, µs)",
    better: "lower",
    referenceIs: "the grouped read each place is counted from, at most once per poll interval",
    params
  })
  emit({
    figure: `queue_position_refresh_${store}_${accounts}_accounts`,
    engine: percentile(refreshes, 50),
    reference: null,
    unit: "ms per grouped read (p50)",
    better: "lower",
    referenceIs: "none: once per poll interval (1 s) per process while places are read",
    params: { ...params, refreshes: REFRESHES, p99Ms: ms(percentile(refreshes, 99)) }
  })
}

const onPostgres = (accounts: number) =>
  withDatabase("queue_position", async (url, name) => {
    const engine = await startEngine(postgresStore({ url: Redacted.make(url), tablePrefix: TABLE_PREFIX }))
    try {
      await measure(
        "postgres",
        engine,
        (templates, copies) => copyJobRows(name, TABLE_PREFIX, templates, copies, { createdAt: 1, fairKey: STEP }),
        accounts
      )
    } finally {
      await engine.dispose()
    }
  })

const onSqlite = async (accounts: number) => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-"))
  const file = join(dir, "bench.db")
  try {
    const engine = await startEngine(sqliteStore({ filename: file }))
    try {
      await measure("sqlite", engine, async (templates, copies) => {
        const db = new DatabaseSync(file)
        try {
          db.exec("PRAGMA busy_timeout = 10000")
          const table = `${TABLE_PREFIX}jobs`
          const columns = (db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name)
          const values = columns.map((c) =>
            c === "id" ? "t.id || '_' || printf('%08d', g.n)" : c === "created_at" ? "t.created_at + g.n" : c === "fair_key" ? `t.fair_key + g.n * ${STEP}` : `t.${c}`
          )
          const ids = templates.map((id) => `'${id.replace(/'/g, "''")}'`).join(", ")
          db.exec(`WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ${copies})
            INSERT INTO ${table} (${columns.join(", ")}) SELECT ${values.join(", ")} FROM ${table} t, g WHERE t.id IN (${ids})`)
          db.exec(`ANALYZE`)
        } finally {
          db.close()
        }
      }, accounts)
    } finally {
      await engine.dispose()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export const queuePosition = async () => {
  for (const { accounts } of SHAPES) {
    await onSqlite(accounts)
    await onPostgres(accounts)
  }
}
