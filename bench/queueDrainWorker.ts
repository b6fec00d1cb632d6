/**
 * A worker process of the queue_drain figure, engine side: the engine from its public entries
 * with BENCH_CONCURRENCY worker fibers and the no-op provider, no HTTP. Started on `go`, so the
 * clock includes its pool and start-up, as graphile-worker's side includes its own.
 */
import type { Engine } from "genjobs"
import { serveParent } from "./lib/child.js"
import { startPgEngine } from "./lib/engine.js"

let engine: Engine | undefined

serveParent({
  start: async () => {
    engine = await startPgEngine(process.env.BENCH_DATABASE_URL!, { workers: Number(process.env.BENCH_CONCURRENCY) })
  },
  stop: async () => {
    await engine?.dispose()
  }
})
