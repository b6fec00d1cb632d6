/**
 * queue_drain: N tiny jobs drained by P worker processes of C workers each, jobs/s, the engine
 * beside graphile-worker in its perfTest shape. Both queues are filled before the clock starts
 * (the engine's through its own submit path, Jobs.submit; graphile-worker's with batched
 * add_jobs), the worker processes load their modules, then all get `go` at once; the clock stops
 * when the database shows every job done, polled every 20 ms on both sides.
 */
import type pg from "pg"
import { forkTs, goAll, readyAll, stopAll } from "./lib/child.js"
import { seed, startPgEngine, submitMany, TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, waitFor, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import { addNoopJobs, graphileJobsFailed, graphileJobsLeft, installGraphile } from "./graphile.js"

const POLL_MS = 20

/** Forks the workers, waits for them to load, starts them together and times until `drained`. */
const drain = async (file: string, url: string, drained: () => Promise<boolean>, timeoutMs: number) => {
  const env = { BENCH_DATABASE_URL: url, BENCH_CONCURRENCY: String(settings.drainConcurrency) }
  const children = Array.from({ length: settings.drainProcesses }, () => forkTs(file, env))
  try {
    await readyAll(children)
    const start = performance.now()
    await goAll(children)
    await waitFor("the queue to drain", drained, POLL_MS, timeoutMs)
    return (performance.now() - start) / 1000
  } finally {
    await stopAll(children)
  }
}

const countByStatus = async (client: pg.Client) => {
  const rows = (await client.query(`SELECT status, count(*) AS n FROM ${TABLE_PREFIX}jobs GROUP BY status`)).rows
  return Object.fromEntries(rows.map((r: { status: string; n: string }) => [r.status, Number(r.n)])) as Record<string, number>
}

const engineSide = (n: number) =>
  withDatabase("drain", async (url, name) => {
    const engine = await startPgEngine(url, { workers: 0 })
    const insertStart = performance.now()
    try {
      // Submits over 8 accounts, 16 at a time: one account's submits serialise on its row.
      await submitMany(engine, await seed(engine, 8), n, 16)
    } finally {
      await engine.dispose()
    }
    const insertSeconds = (performance.now() - insertStart) / 1000
    const client = await connect(name)
    try {
      const seconds = await drain("queueDrainWorker.ts", url, async () => {
        const by = await countByStatus(client)
        return (by["pending"] ?? 0) + (by["processing"] ?? 0) === 0
      }, 600_000)
      const by = await countByStatus(client)
      if (by["completed"] !== n) throw new Error(`engine drain: expected ${n} completed jobs, found ${JSON.stringify(by)}`)
      return { seconds, insertSeconds }
    } finally {
      await client.end()
    }
  })

const graphileSide = (n: number) =>
  withDatabase("graphile", async (url, name) => {
    await installGraphile(url)
    const client = await connect(name)
    try {
      const insertStart = performance.now()
      await addNoopJobs(client, n)
      const insertSeconds = (performance.now() - insertStart) / 1000
      const seconds = await drain("graphileWorker.ts", url, async () => (await graphileJobsLeft(client)) === 0, 600_000)
      const failed = await graphileJobsFailed(client)
      if (failed !== 0) throw new Error(`graphile-worker drain: ${failed} jobs failed`)
      return { seconds, insertSeconds }
    } finally {
      await client.end()
    }
  })

export const queueDrain = async () => {
  const n = settings.drainJobs
  log(`queue_drain: engine, ${n} jobs`)
  const engine = await engineSide(n)
  log(`queue_drain: graphile-worker, ${n} jobs`)
  const graphile = await graphileSide(n)
  emit({
    figure: "queue_drain",
    engine: n / engine.seconds,
    reference: n / graphile.seconds,
    unit: "jobs/s",
    better: "higher",
    referenceIs: "graphile-worker 0.18, perfTest shape (batched add_jobs, no-op task)",
    target: ">= 0.5",
    params: {
      jobs: n,
      processes: settings.drainProcesses,
      concurrency: settings.drainConcurrency,
      engineInsert: "Jobs.submit over 8 accounts, 16 in flight, before the clock",
      engineInsertJobsPerSecond: Math.round(n / engine.insertSeconds),
      referenceInsert: "add_jobs, 1000 per call, before the clock",
      referenceInsertJobsPerSecond: Math.round(n / graphile.insertSeconds),
      engineSeconds: Math.round(engine.seconds * 1000) / 1000,
      referenceSeconds: Math.round(graphile.seconds * 1000) / 1000
    }
  })
}
