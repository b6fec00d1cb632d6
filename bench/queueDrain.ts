/**
 * queue_drain: N tiny jobs drained by P worker processes of C workers each, jobs/s, the engine
 * beside graphile-worker in its perfTest shape. Each queue is filled before the clock starts
 * (the engine's through its own submit path, Jobs.submit; graphile-worker's with batched
 * add_jobs), the worker processes load their modules, then all get `go` at once; the clock stops
 * when the database shows every job done, polled every 20 ms on every side.
 *
 * graphile-worker runs twice in the same run, each on a fresh database with the same P x C
 * (graphile.ts): `batched`, its best published configuration (a local queue of 500, batched
 * completions and failures), the reference of the ratio, since the project's target (>= 0.5x) is
 * against graphile-worker at its best; and `unbatched`, its defaults (each worker fetches its own
 * job, one statement per completion), the reference of the earlier results, printed in params
 * (`unbatched*`) for comparison with them. Batched, the default 15,500 jobs drain in about half a
 * second on 2 cores, so the 20 ms poll and the runners' start-up weigh a few per cent there; a
 * larger BENCH_DRAIN_JOBS gives a steadier reference.
 */
import type pg from "pg"
import { forkTs, goAll, readyAll, stopAll } from "./lib/child.js"
import { seed, startPgEngine, submitMany, TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, waitFor, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import {
  addNoopJobs,
  type GraphileConfigName,
  graphileConfigLabel,
  graphileJobsFailed,
  graphileJobsLeft,
  installGraphile
} from "./graphile.js"

const POLL_MS = 20

/** Forks the workers, waits for them to load, starts them together and times until `drained`. */
const drain = async (
  file: string,
  url: string,
  drained: () => Promise<boolean>,
  timeoutMs: number,
  extraEnv: Record<string, string> = {}
) => {
  const env = { ...extraEnv, BENCH_DATABASE_URL: url, BENCH_CONCURRENCY: String(settings.drainConcurrency) }
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

const graphileSide = (n: number, config: GraphileConfigName) =>
  withDatabase(config === "batched" ? "graphileb" : "graphile", async (url, name) => {
    await installGraphile(url)
    const client = await connect(name)
    try {
      const insertStart = performance.now()
      await addNoopJobs(client, n)
      const insertSeconds = (performance.now() - insertStart) / 1000
      const seconds = await drain("graphileWorker.ts", url, async () => (await graphileJobsLeft(client)) === 0, 600_000, {
        BENCH_GRAPHILE_CONFIG: config
      })
      const failed = await graphileJobsFailed(client)
      if (failed !== 0) throw new Error(`graphile-worker ${config} drain: ${failed} jobs failed`)
      return { seconds, insertSeconds }
    } finally {
      await client.end()
    }
  })

const seconds = (s: number) => Math.round(s * 1000) / 1000

export const queueDrain = async () => {
  const n = settings.drainJobs
  log(`queue_drain: engine, ${n} jobs`)
  const engine = await engineSide(n)
  log(`queue_drain: graphile-worker unbatched (${graphileConfigLabel.unbatched}), ${n} jobs`)
  const unbatched = await graphileSide(n, "unbatched")
  log(`queue_drain: graphile-worker batched (${graphileConfigLabel.batched}), ${n} jobs`)
  const batched = await graphileSide(n, "batched")
  const engineRate = n / engine.seconds
  const unbatchedRate = n / unbatched.seconds
  emit({
    figure: "queue_drain",
    engine: engineRate,
    reference: n / batched.seconds,
    unit: "jobs/s",
    better: "higher",
    referenceIs: `graphile-worker 0.18 batched (${graphileConfigLabel.batched}), perfTest shape (batched add_jobs, no-op task)`,
    target: ">= 0.5",
    params: {
      jobs: n,
      processes: settings.drainProcesses,
      concurrency: settings.drainConcurrency,
      engineInsert: "Jobs.submit over 8 accounts, 16 in flight, before the clock",
      engineInsertJobsPerSecond: Math.round(n / engine.insertSeconds),
      referenceInsert: "add_jobs, 1000 per call, before the clock",
      referenceInsertJobsPerSecond: Math.round(n / batched.insertSeconds),
      engineSeconds: seconds(engine.seconds),
      referenceSeconds: seconds(batched.seconds),
      referenceConfig: "batched",
      unbatchedReferenceIs: `graphile-worker 0.18 unbatched (${graphileConfigLabel.unbatched}), the same shape`,
      unbatchedReference: Math.round(unbatchedRate),
      unbatchedRatio: Math.round((engineRate / unbatchedRate) * 1000) / 1000,
      unbatchedReferenceSeconds: seconds(unbatched.seconds),
      unbatchedReferenceInsertJobsPerSecond: Math.round(n / unbatched.insertSeconds)
    }
  })
}
