/**
 * The worker process of the pickup figure's cross-process cases: an engine with one worker fiber
 * on the figure's database, table prefix and queue (BENCH_DATABASE_URL, BENCH_PICKUP_PREFIX,
 * BENCH_PICKUP_QUEUE as JSON), whose provider tells the parent when each job reached it, on the
 * clock the processes share (with BENCH_PICKUP_BARE=1 on NATS, a bare JetStream consumer instead of
 * the engine: pickupLib.ts's startBareJetStream). Says `ready` once its engine runs; answers `ping` with its clock;
 * exits on `stop` (the OS closes whatever a library left open, so the parent can drop the database).
 */
import type { Engine } from "genjobs"
import type { BenchQueue } from "./lib/engine.js"
import { type FromPickupWorker, sharedNow, startBareJetStream, startPickupEngine, timedProvider, type ToPickupWorker } from "./pickupLib.js"

const send = (message: FromPickupWorker) => process.send!(message)

let engine: Engine | undefined
let stopBare: (() => Promise<void>) | undefined

process.on("message", (message: ToPickupWorker) => {
  if (message.type === "ping") return send({ type: "pong", at: sharedNow() })
  void (async () => {
    try {
      await engine?.dispose()
      await stopBare?.()
    } finally {
      process.exit(0)
    }
  })()
})

try {
  const queue = JSON.parse(process.env.BENCH_PICKUP_QUEUE!) as BenchQueue
  const prefix = process.env.BENCH_PICKUP_PREFIX!
  const seen = (id: string, at: number) => send({ type: "seen", id, at })
  if (process.env.BENCH_PICKUP_BARE === "1" && queue.kind === "nats") stopBare = await startBareJetStream(queue.url, prefix, seen)
  else engine = await startPickupEngine(process.env.BENCH_DATABASE_URL!, { workers: 1, provider: timedProvider(seen), queue, prefix })
  send({ type: "ready" })
} catch (error) {
  process.send!({ type: "failed", message: String(error instanceof Error ? error.stack : error) } satisfies FromPickupWorker, () => process.exit(1))
}
