/**
 * A worker process of the queue_drain figures, engine side: the engine from its public entries
 * with BENCH_CONCURRENCY worker fibers and the no-op provider, no HTTP, on the queue
 * BENCH_DRAIN_QUEUE (the store's own, or a broker under the run's prefix: see queueDrain.ts).
 * Started on `go`, so the clock includes its pool, its broker connections and start-up, as the
 * references' sides include their own.
 */
import type { Engine } from "genjobs"
import { serveParent } from "./lib/child.js"
import { queueFromEnv, startDrainEngine } from "./queueDrain.js"

// The bench's stdout carries its JSON lines only: this process's output (the engine's warnings) goes to stderr.
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write

let engine: Engine | undefined

serveParent({
  start: async () => {
    engine = await startDrainEngine(process.env.BENCH_DATABASE_URL!, Number(process.env.BENCH_CONCURRENCY), queueFromEnv())
  },
  stop: async () => {
    await engine?.dispose()
  }
})
