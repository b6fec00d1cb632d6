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

// BENCH_DRAIN_COUNT=1 (queueDrainCost.ts): counts the statements sent, by their first 60 characters (each
// statement's span gets its text as an attribute), printed to stderr on stop; an ending that also
// claims (finishHeldAndClaim) is counted apart, as "+ claim".
const counts = new Map<string, number>()
if (process.env.BENCH_DRAIN_COUNT === "1") {
  const { NativeSpan } = await import("effect/Tracer")
  const attribute = NativeSpan.prototype.attribute
  NativeSpan.prototype.attribute = function(key: string, value: unknown) {
    if (key === "db.query.text") {
      const text = String(value)
      const kind = text.replace(/\s+/g, " ").trim().slice(0, 60) + (text.includes("claimed AS (") ? " + claim" : "")
      counts.set(kind, (counts.get(kind) ?? 0) + 1)
    }
    return attribute.call(this, key, value)
  }
}

serveParent({
  start: async () => {
    engine = await startDrainEngine(process.env.BENCH_DATABASE_URL!, Number(process.env.BENCH_CONCURRENCY), queueFromEnv())
  },
  stop: async () => {
    await engine?.dispose()
    if (counts.size > 0) process.stderr.write(`statements ${process.pid} ${JSON.stringify([...counts].sort((a, b) => b[1] - a[1]))}\n`)
  }
})
