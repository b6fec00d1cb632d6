/**
 * A worker process of the queue_drain figure, graphile-worker side, as its perfTest runs it: a
 * runner with concurrency BENCH_CONCURRENCY and a pool of concurrency + 1, one no-op task.
 */
import { type Runner, run } from "graphile-worker"
import { serveParent } from "./lib/child.js"
import { graphilePool, quietLogger } from "./graphile.js"

let runner: Runner | undefined
const concurrency = Number(process.env.BENCH_CONCURRENCY)

serveParent({
  start: async () => {
    const pgPool = graphilePool(process.env.BENCH_DATABASE_URL!, concurrency + 1)
    runner = await run({
      pgPool,
      concurrency,
      noHandleSignals: true,
      logger: quietLogger,
      taskList: { noop: async () => {} }
    })
  },
  stop: async () => {
    await runner?.stop()
  }
})
