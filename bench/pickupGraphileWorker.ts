/**
 * graphile-worker in another process, beside `pickup_remote_p50` (pickup.ts): a runner of the
 * given configuration (BENCH_GRAPHILE_CONFIG, graphile.ts) with concurrency 1 on the database
 * BENCH_DATABASE_URL, in a process of its own as the engine's worker is there, whose task tells
 * the parent when each job reached it (its payload's `id`), on the clock the processes share.
 * The graphile-worker references of every other figure run in the timing process itself, so a
 * job added there wakes the process that added it; this one says what the other process costs
 * graphile-worker. Speaks pickupWorker.ts's messages: `ready`, `seen`, `pong`; exits on `stop`.
 */
import type { Runner } from "graphile-worker"
import { type GraphileConfigName, graphilePool, runGraphile } from "./graphile.js"
import { type FromPickupWorker, sharedNow, type ToPickupWorker } from "./pickupLib.js"

const send = (message: FromPickupWorker) => process.send!(message)

let runner: Runner | undefined

process.on("message", (message: ToPickupWorker) => {
  if (message.type === "ping") return send({ type: "pong", at: sharedNow() })
  void (async () => {
    try {
      await runner?.stop()
    } finally {
      process.exit(0)
    }
  })()
})

try {
  runner = await runGraphile(process.env.BENCH_GRAPHILE_CONFIG as GraphileConfigName, {
    pgPool: graphilePool(process.env.BENCH_DATABASE_URL!, 4),
    concurrency: 1,
    taskList: {
      latency: async (payload) => {
        send({ type: "seen", id: String((payload as { id: string }).id), at: sharedNow() })
      }
    }
  })
  send({ type: "ready" })
} catch (error) {
  process.send!({ type: "failed", message: String(error instanceof Error ? error.stack : error) } satisfies FromPickupWorker, () => process.exit(1))
}
