/**
 * The BullMQ reference of `pickup_redis_p50` (pickup.ts): one BullMQ Worker with concurrency 1 on
 * the queue BENCH_BULLMQ_PREFIX at BENCH_REDIS_URL, in a process of its own as the engine's worker
 * is, whose processor tells the parent when each job reached it (the job's data `id`), on the
 * clock the processes share. Speaks pickupWorker.ts's messages: `ready`, `seen`, `pong`; exits
 * on `stop`.
 */
import { Worker } from "bullmq"
import { BULLMQ_QUEUE, bullmqClient } from "./bullmq.js"
import { type FromPickupWorker, sharedNow, type ToPickupWorker } from "./pickupLib.js"

const send = (message: FromPickupWorker) => process.send!(message)

let worker: Worker | undefined

process.on("message", (message: ToPickupWorker) => {
  if (message.type === "ping") return send({ type: "pong", at: sharedNow() })
  void (async () => {
    try {
      await worker?.close()
    } finally {
      process.exit(0)
    }
  })()
})

try {
  worker = new Worker(BULLMQ_QUEUE, async (job) => send({ type: "seen", id: String((job.data as { id: string }).id), at: sharedNow() }), {
    connection: bullmqClient(process.env.BENCH_REDIS_URL!),
    prefix: process.env.BENCH_BULLMQ_PREFIX!,
    concurrency: 1
  })
  worker.on("error", (error) => process.stderr.write(`[bullmq pickup worker] ${error.message}\n`))
  await worker.waitUntilReady()
  send({ type: "ready" })
} catch (error) {
  process.send!({ type: "failed", message: String(error instanceof Error ? error.stack : error) } satisfies FromPickupWorker, () => process.exit(1))
}
