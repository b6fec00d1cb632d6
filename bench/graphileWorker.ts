/**
 * A worker process of the queue_drain figure, graphile-worker side, as its perfTest runs it: a
 * runner with concurrency BENCH_CONCURRENCY and a pool of concurrency + 1, one no-op task, in the
 * configuration BENCH_GRAPHILE_CONFIG (`unbatched` or `batched`, see graphile.ts). Started on
 * `go`, so the clock includes its pool and start-up, as the engine's side includes its own.
 */
import type { Runner } from "graphile-worker"
import { serveParent } from "./lib/child.js"
import { type GraphileConfigName, graphilePool, runGraphile } from "./graphile.js"

let runner: Runner | undefined
const concurrency = Number(process.env.BENCH_CONCURRENCY)
const config = process.env.BENCH_GRAPHILE_CONFIG
if (config !== "unbatched" && config !== "batched") throw new Error(`BENCH_GRAPHILE_CONFIG must be unbatched or batched, got ${config}`)

serveParent({
  start: async () => {
    const pgPool = graphilePool(process.env.BENCH_DATABASE_URL!, concurrency + 1)
    runner = await runGraphile(config satisfies GraphileConfigName, { pgPool, concurrency, taskList: { noop: async () => {} } })
  },
  stop: async () => {
    await runner?.stop()
  }
})
