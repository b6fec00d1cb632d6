/**
 * sqlite_drain: the default store's drain, and whether it keeps its rate as the store's history
 * grows. One in-process engine on a SQLite file with BENCH_DRAIN_CONCURRENCY (24) worker fibers
 * and the no-op provider drains BENCH_SQLITE_DRAIN_JOBS (10,000) jobs submitted over 8 accounts
 * beforehand; jobs/s from the workers' start to the last job ended (the file polled every 20 ms
 * on a connection of its own), CPU per job of this process from /proc's view (process.cpuUsage).
 * Each drain on a file of its own, after a drain of 2,000 jobs there: the figure on a file that
 * holds BENCH_SQLITE_DRAIN_ENDED (200,000) ended jobs by then (copies of the 2,000, their ids and
 * end times spread), the reference on one that holds only the 2,000; a first drain, unmeasured,
 * warms the process. SQLite keeps no statistics here, and a statement that finds its rows
 * through the status index reads every job of that status: an ending's changes-feed entries did
 * so once per ending, and a drain beside 400,000 ended jobs ran at a fifth of its fresh rate
 * (docs/decisions.md, "SQLite's reads of ended and processing jobs go by key or by their own
 * index"). The target is the same rate either way.
 */
import { sqliteStore } from "genjobs/sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { benchEngine, seed, submitMany, TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { emit, log } from "./lib/report.js"

const POLL_MS = 20
const TEMPLATES = 2_000
const JOBS = `"${TABLE_PREFIX}jobs"`

const engineOn = (filename: string, workers: number) =>
  benchEngine(sqliteStore({ filename, tablePrefix: TABLE_PREFIX }), { workers })

/** Resolves once the file holds no pending or processing job. */
const drained = async (db: DatabaseSync) => {
  const unfinished = db.prepare(`SELECT EXISTS (SELECT 1 FROM ${JOBS} WHERE status IN ('pending', 'processing')) AS n`)
  while ((unfinished.get() as { n: number }).n === 1) await new Promise((resolve) => setTimeout(resolve, POLL_MS))
}

/** Copies the file's completed jobs until it holds about `ended` of them: new ids, request ids, keys and end times. */
const copyEnded = (db: DatabaseSync, ended: number) => {
  const columns = (db.prepare(`SELECT name FROM pragma_table_info('${TABLE_PREFIX}jobs')`).all() as Array<{ name: string }>).map((c) => c.name)
  const copied: Record<string, string> = {
    id: "id || '_' || n.k",
    request_id: "request_id || '_' || n.k",
    fair_key: "fair_key + n.k * 100000000",
    completed_at: "completed_at - n.k * 1000"
  }
  db.exec(`WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ${Math.ceil(ended / TEMPLATES) - 1})
    INSERT INTO ${JOBS} (${columns.join(", ")}) SELECT ${columns.map((c) => copied[c] ?? c).join(", ")}
    FROM ${JOBS}, n WHERE status = 'completed'`)
  // The copy's pages written back now, not by the drain's first commits.
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)")
}

const drainOnce = async (ended: number) => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-sqlite-drain-"))
  const filename = join(dir, "bench.db")
  try {
    let engine = await engineOn(filename, 0)
    const callers = await seed(engine, settings.drainAccounts)
    const db = new DatabaseSync(filename)
    try {
      // A drain of TEMPLATES jobs first on both files: the warm-up (the process's first drain
      // runs on code not yet optimised), and the rows the history is copied from.
      await submitMany(engine, callers, TEMPLATES, 16)
      await engine.dispose()
      engine = await engineOn(filename, settings.drainConcurrency)
      await drained(db)
      await engine.dispose()
      if (ended > TEMPLATES) copyEnded(db, ended)
      engine = await engineOn(filename, 0)
      const endedCount = (db.prepare(`SELECT COUNT(*) AS n FROM ${JOBS} WHERE status = 'completed'`).get() as { n: number }).n
      await submitMany(engine, callers, settings.sqliteDrainJobs, 16)
      await engine.dispose()
      const cpu = process.cpuUsage()
      const start = performance.now()
      engine = await engineOn(filename, settings.drainConcurrency)
      await drained(db)
      const seconds = (performance.now() - start) / 1000
      const used = process.cpuUsage(cpu)
      await engine.dispose()
      return {
        jobsPerSecond: settings.sqliteDrainJobs / seconds,
        cpuUsPerJob: Math.round((used.user + used.system) / settings.sqliteDrainJobs),
        endedBefore: endedCount
      }
    } finally {
      db.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export const sqliteDrain = async () => {
  const n = settings.sqliteDrainJobs
  // A first drain unmeasured: the process's first runs its code before it is optimised, and
  // whichever side came first would be measured colder than the other.
  log(`sqlite_drain: ${n} jobs on a fresh SQLite file, a warm-up`)
  await drainOnce(0)
  log(`sqlite_drain: ${n} jobs beside ${settings.sqliteDrainEnded} ended ones`)
  const history = await drainOnce(settings.sqliteDrainEnded)
  log(`sqlite_drain: ${n} jobs on a fresh SQLite file`)
  const fresh = await drainOnce(0)
  emit({
    figure: "sqlite_drain",
    engine: history.jobsPerSecond,
    reference: fresh.jobsPerSecond,
    unit: "jobs/s",
    better: "higher",
    referenceIs: "the same drain on a SQLite file holding only the warm-up's 2,000 ended jobs",
    target: ">= 0.9: the default store drains beside its history as fast as on a fresh file",
    params: {
      jobs: n,
      workers: settings.drainConcurrency,
      endedBefore: history.endedBefore,
      referenceEndedBefore: fresh.endedBefore,
      cpuUsPerJob: history.cpuUsPerJob,
      freshCpuUsPerJob: fresh.cpuUsPerJob
    }
  })
}
