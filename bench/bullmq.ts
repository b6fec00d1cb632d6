/**
 * BullMQ, the reference of `queue_drain_redis`: the engine on Redis beside the best-known job
 * queue on the same Redis. Its queue is made, filled and timed the way its docs and benchmarks
 * drive it: jobs added with `addBulk` in batches, a no-op processor, `concurrency` per Worker,
 * and its docs' auto-removal (`removeOnComplete: true`), so finished jobs do not pile up in
 * Redis. Everything else is BullMQ's defaults (its events stream, stalled checks, lock renewal).
 *
 * The client is node-redis (`@redis/client`, passed as a client instance, which BullMQ 6 wraps in
 * its node-redis adapter): the project's own Redis client, and the one installed. BullMQ's
 * default, ioredis, is not a dependency here; a Worker duplicates the client for its blocking
 * connection as it does with ioredis.
 *
 * Each run gets a queue prefix of its own (`bench_bull_<random>`) on the shared Redis, and
 * `obliterate` removes the queue afterwards; any key left under the prefix is deleted too.
 */
import { createClient } from "@redis/client"
import { Queue } from "bullmq"
import { randomBytes } from "node:crypto"
import { createRequire } from "node:module"

/** The installed BullMQ's version, named in the figures' references. */
export const bullmqVersion = (createRequire(import.meta.url)("bullmq/package.json") as { version: string }).version

/** The queue's name under its prefix; the prefix makes it this run's own. */
export const BULLMQ_QUEUE = "drain"

/** A client for BullMQ to wrap (it connects it itself). */
export const bullmqClient = (url: string) => createClient({ url })

/** The job options of every job added: BullMQ's auto-removal of completed jobs, failed ones kept to be counted. */
export const BULLMQ_JOB_OPTIONS = { removeOnComplete: true, removeOnFail: false } as const

export const bullmqPrefix = () => `bench_bull_${randomBytes(4).toString("hex")}`

export const openBullmqQueue = async (url: string, prefix: string): Promise<Queue> => {
  const queue = new Queue(BULLMQ_QUEUE, { connection: bullmqClient(url), prefix, defaultJobOptions: BULLMQ_JOB_OPTIONS })
  await queue.waitUntilReady()
  return queue
}

/** Adds `count` no-op jobs, `batch` per `addBulk` call (each call is one transaction in Redis). */
export const addNoopBullmqJobs = async (queue: Queue, count: number, batch = 1_000) => {
  for (let from = 0; from < count; from += batch) {
    const size = Math.min(batch, count - from)
    await queue.addBulk(Array.from({ length: size }, (_, i) => ({ name: "noop", data: { id: from + i } })))
  }
}

/** Jobs not yet finished: waiting, active, delayed, prioritized or waiting on children. */
export const bullmqJobsLeft = async (queue: Queue) => {
  const counts = await queue.getJobCounts("wait", "active", "delayed", "prioritized", "waiting-children")
  return Object.values(counts).reduce((sum, n) => sum + n, 0)
}

export const bullmqJobsFailed = async (queue: Queue) => (await queue.getJobCounts("failed"))["failed"] ?? 0

/** Removes the queue and everything under its prefix, then closes the queue's connection. */
export const removeBullmqQueue = async (queue: Queue, url: string, prefix: string) => {
  try {
    await queue.obliterate({ force: true })
  } finally {
    await queue.close()
    await deleteRedisKeys(url, `${prefix}:*`)
  }
}

/** Deletes every key matching `pattern` (a prefix of this run's own), answering how many there were. */
export const deleteRedisKeys = async (url: string, pattern: string): Promise<number> => {
  const client = createClient({ url })
  await client.connect()
  try {
    let deleted = 0
    for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1_000 })) {
      if (keys.length > 0) deleted += await client.del(keys)
    }
    return deleted
  } finally {
    client.destroy()
  }
}
