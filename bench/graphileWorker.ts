/**
 * A worker process of the queue_drain figure, graphile-worker side, as its perfTest runs it: a
 * runner with concurrency BENCH_CONCURRENCY, in the configuration BENCH_GRAPHILE_CONFIG
 * (`unbatched` or `batched`, see graphile.ts), running one task: by default the no-op task with a
 * pool of concurrency + 1; with BENCH_GRAPHILE_TASK=sameWrites the task that makes an engine job's
 * store writes (graphileSameWrites.ts) with a pool of SAME_WRITES_POOL. Started on `go`, so the
 * clock includes its pool and start-up, as the engine's side includes its own.
 */
import type { Runner, TaskList } from "graphile-worker"
import { serveParent } from "./lib/child.js"
import { type GraphileConfigName, graphilePool, runGraphile } from "./graphile.js"
import { SAME_WRITES_POOL, SAME_WRITES_TASK, sameWritesTask } from "./graphileSameWrites.js"

let runner: Runner | undefined
const concurrency = Number(process.env.BENCH_CONCURRENCY)
const config = process.env.BENCH_GRAPHILE_CONFIG
if (config !== "unbatched" && config !== "batched") throw new Error(`BENCH_GRAPHILE_CONFIG must be unbatched or batched, got ${config}`)
const task = process.env.BENCH_GRAPHILE_TASK ?? "noop"
if (task !== "noop" && task !== "sameWrites") throw new Error(`BENCH_GRAPHILE_TASK must be noop or sameWrites, got ${task}`)

const taskList: TaskList = task === "noop"
  ? { noop: async () => {} }
  : { [SAME_WRITES_TASK]: sameWritesTask(`graphile-${process.pid}`) }

serveParent({
  start: async () => {
    const pgPool = graphilePool(process.env.BENCH_DATABASE_URL!, task === "noop" ? concurrency + 1 : SAME_WRITES_POOL)
    runner = await runGraphile(config satisfies GraphileConfigName, { pgPool, concurrency, taskList })
  },
  stop: async () => {
    await runner?.stop()
  }
})
