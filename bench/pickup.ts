/**
 * pickup: how long a job waits for an idle worker, p50/p99 over sequential jobs, the engine beside
 * graphile-worker in the shape of its latencyTest: one process, one worker (concurrency 1), each
 * job added after the previous one started, time from before the submit (engine: Jobs.submit;
 * graphile-worker: addJob) to the provider / task being called. A 10 ms pause between jobs lets
 * the previous job finish, so this is wake-up plus claim, not queueing behind a running job.
 *
 * The engine's submit hands the job to its own idle worker when it has one (docs/decisions.md,
 * "Local hand-off"), which graphile-worker does not do; pickup_remote_p50 times the other path
 * too, a submit from an API-only engine picked up by another engine's worker (NOTIFY, then a
 * claim), against the same graphile-worker reference.
 *
 * graphile-worker is measured in both configurations of graphile.ts, each on a fresh database:
 * `unbatched` (its defaults) and `batched` (its best published throughput configuration: a local
 * queue of 500, batched completions). Batching is for throughput and may cost latency (the local
 * queue's fetch sits between the NOTIFY and the task), so the reference of both figures is the
 * configuration with the lower p50 in this run, `referenceConfig` in params, the other beside it.
 */
import { Effect } from "effect"
import { makeWorkerUtils } from "graphile-worker"
import type { GenerationProvider } from "genjobs"
import { noopProvider, seed, startPgEngine, submit } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { withDatabase } from "./lib/pg.js"
import { emit, log, ms, percentile } from "./lib/report.js"
import { type GraphileConfigName, graphileConfigLabel, graphilePool, installGraphile, quietLogger, runGraphile } from "./graphile.js"

const WARMUP = 20
const PAUSE_MS = 10

/** Resolvers of the jobs in flight by id, called with the time the worker saw them. */
const starts = new Map<string, (at: number) => void>()
const started = (id: string, at: number) => starts.get(id)?.(at)

/** Times `samples` sequential jobs; `add(id)` queues job `id`, whose start must call `started(id, now)`. */
const measure = async (samples: number, add: (id: string) => Promise<unknown>) => {
  const latencies: Array<number> = []
  for (let i = 0; i < WARMUP + samples; i++) {
    const id = `j${i}`
    const seen = new Promise<number>((resolve) => starts.set(id, resolve))
    const t0 = performance.now()
    await add(id)
    const t1 = await seen
    starts.delete(id)
    if (i >= WARMUP) latencies.push(t1 - t0)
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS))
  }
  return latencies
}

const timedProvider = {
  ...noopProvider,
  start: ({ job }) =>
    Effect.sync(() => {
      started(String(job.input["prompt"]), performance.now())
      return { _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const
    })
} satisfies GenerationProvider

/** `remote`: submits go through an engine without workers; a second engine on the database runs them. */
const engineSide = (samples: number, remote: boolean) =>
  withDatabase(remote ? "pickupr" : "pickup", async (url) => {
    const engine = await startPgEngine(url, { workers: remote ? 0 : 1, provider: timedProvider })
    try {
      const [caller] = await seed(engine, 1)
      // Started after the seed, so its catalog is the bench's from the start.
      const worker = remote ? await startPgEngine(url, { workers: 1, provider: timedProvider }) : undefined
      try {
        return await measure(samples, (id) => submit(engine, caller!, id))
      } finally {
        await worker?.dispose()
      }
    } finally {
      await engine.dispose()
    }
  })

const graphileSide = (samples: number, config: GraphileConfigName) =>
  withDatabase(config === "batched" ? "pickupgb" : "pickupg", async (url) => {
    await installGraphile(url)
    const pool = graphilePool(url, 4)
    const runner = await runGraphile(config, {
      pgPool: pool,
      concurrency: 1,
      taskList: { latency: async (payload) => started(String((payload as { id: string }).id), performance.now()) }
    })
    const utils = await makeWorkerUtils({ pgPool: pool, logger: quietLogger })
    try {
      return await measure(samples, (id) => utils.addJob("latency", { id }))
    } finally {
      await utils.release()
      await runner.stop()
      await pool.end()
    }
  })

export const pickup = async () => {
  const samples = settings.pickupSamples
  log(`pickup: engine, ${samples} sequential jobs`)
  const engine = await engineSide(samples, false)
  log(`pickup: engine, submits from an API-only engine, ${samples} sequential jobs`)
  const remote = await engineSide(samples, true)
  log(`pickup: graphile-worker unbatched (${graphileConfigLabel.unbatched}), ${samples} sequential jobs`)
  const unbatched = await graphileSide(samples, "unbatched")
  log(`pickup: graphile-worker batched (${graphileConfigLabel.batched}), ${samples} sequential jobs`)
  const batched = await graphileSide(samples, "batched")
  // The better (lower) p50 of the two is the reference; a tie goes to the batched configuration.
  const referenceConfig: GraphileConfigName = percentile(batched, 50) <= percentile(unbatched, 50) ? "batched" : "unbatched"
  const graphile = referenceConfig === "batched" ? batched : unbatched
  const referenceIs = `graphile-worker 0.18, latencyTest shape (addJob -> task start), the lower p50 of its two configurations: ` +
    `${referenceConfig} (${graphileConfigLabel[referenceConfig]})`
  const params = {
    samples,
    warmup: WARMUP,
    workers: 1,
    pauseMs: PAUSE_MS,
    engineP99: ms(percentile(engine, 99)),
    referenceP99: ms(percentile(graphile, 99)),
    p99Ratio: ms(percentile(engine, 99) / percentile(graphile, 99)),
    referenceConfig,
    batchedReferenceIs: graphileConfigLabel.batched,
    batchedReferenceP50: ms(percentile(batched, 50)),
    batchedReferenceP99: ms(percentile(batched, 99)),
    unbatchedReferenceIs: graphileConfigLabel.unbatched,
    unbatchedReferenceP50: ms(percentile(unbatched, 50)),
    unbatchedReferenceP99: ms(percentile(unbatched, 99))
  }
  emit({
    figure: "pickup_p50",
    engine: percentile(engine, 50),
    reference: percentile(graphile, 50),
    unit: "ms",
    better: "lower",
    referenceIs,
    target: "<= 1.5",
    params
  })
  emit({
    figure: "pickup_remote_p50",
    engine: percentile(remote, 50),
    reference: percentile(graphile, 50),
    unit: "ms",
    better: "lower",
    referenceIs,
    target: "<= 1.5 (the issue's pickup target, on the path without local hand-off)",
    params: {
      ...params,
      engineP99: ms(percentile(remote, 99)),
      p99Ratio: ms(percentile(remote, 99) / percentile(graphile, 99))
    }
  })
}
