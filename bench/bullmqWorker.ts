/**
 * A worker process of the queue_drain_redis figure, BullMQ side: one BullMQ Worker with
 * `concurrency` BENCH_CONCURRENCY and a no-op processor on the queue BENCH_BULLMQ_PREFIX at
 * BENCH_REDIS_URL. Made on `go`, so the clock includes its connections and start-up, as the
 * engine's side includes its own.
 */
import { Worker } from "bullmq"
import { BULLMQ_QUEUE, bullmqClient } from "./bullmq.js"
import { serveParent } from "./lib/child.js"

// The bench's stdout carries its JSON lines only: this process's output goes to stderr.
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write

let worker: Worker | undefined

serveParent({
  start: async () => {
    worker = new Worker(BULLMQ_QUEUE, async () => {}, {
      connection: bullmqClient(process.env.BENCH_REDIS_URL!),
      prefix: process.env.BENCH_BULLMQ_PREFIX!,
      // Auto-removal comes with each job (BULLMQ_JOB_OPTIONS in bullmq.ts).
      concurrency: Number(process.env.BENCH_CONCURRENCY)
    })
    worker.on("error", (error) => process.stderr.write(`[bullmq worker] ${error.message}\n`))
    await worker.waitUntilReady()
  },
  stop: async () => {
    await worker?.close()
  }
})
