/**
 * What the pickup figure (pickup.ts) and its worker process (pickupWorker.ts) share: the engine
 * on a table prefix of the figure's own, the provider that says when a job reached it, the
 * messages between the two processes, and the clean-up of what a queue made in its broker.
 */
import { randomBytes } from "node:crypto"
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream"
import { connect as natsConnect } from "@nats-io/transport-node"
import { createClient } from "@redis/client"
import { Effect } from "effect"
import type { Engine, GenerationProvider } from "genjobs"
import { type BenchQueue, noopProvider, startPgEngine } from "./lib/engine.js"

/** Shared brokers of this machine; override with BENCH_REDIS_URL / BENCH_NATS_URL. */
export const brokerUrls = {
  redis: process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379",
  nats: process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222"
}

/**
 * A table prefix of the figure's own, new each run (`pk<hex>_`). On a broker it starts every
 * name the queue makes (the Redis stream, the NATS stream and consumer), so a run never takes
 * another run's deliveries (or another bench's, on lib/engine.ts's fixed `genjobs_`), and its
 * names can be deleted afterwards.
 */
export const newPrefix = () => `pk${randomBytes(4).toString("hex")}_`

/** Milliseconds on a clock every process of this machine shares (checked in pickup.ts). */
export const sharedNow = () => performance.timeOrigin + performance.now()

/** startPgEngine (lib/engine.ts) on `prefix`, store and queue alike. */
export const startPickupEngine = (
  url: string,
  options: { readonly workers: number; readonly provider: GenerationProvider; readonly queue: BenchQueue; readonly prefix: string }
): Promise<Engine> => startPgEngine(url, options)

/** The no-op provider, calling `seen(id, sharedNow())` first, the id being the job's prompt. */
export const timedProvider = (seen: (id: string, at: number) => void): GenerationProvider => ({
  ...noopProvider,
  start: ({ job }) =>
    Effect.sync(() => {
      seen(String(job.input["prompt"]), sharedNow())
      return { _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const
    })
})

/** Deletes what a queue on `prefix` made in its broker: the Redis keys, or the NATS stream (and its consumer). */
export const deleteBrokerNames = async (queue: BenchQueue, prefix: string): Promise<void> => {
  if (queue.kind === "redis") {
    const client = createClient({ url: queue.url })
    await client.connect()
    try {
      const keys: Array<string> = []
      for await (const found of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 100 })) keys.push(...[found].flat())
      if (keys.length > 0) await client.del(keys)
    } finally {
      client.destroy()
    }
  } else if (queue.kind === "nats") {
    const nc = await natsConnect({ servers: [queue.url] })
    try {
      const jsm = await jetstreamManager(nc)
      for await (const stream of jsm.streams.list()) {
        if (stream.config.name.startsWith(prefix)) await jsm.streams.delete(stream.config.name)
      }
    } finally {
      await nc.close()
    }
  }
}

/**
 * The reference of the NATS figure: a bare JetStream consumer, as an application would write one
 * with nats.js and nothing around it. A work-queue stream `<prefix>bare` (file storage, as the
 * engine's queue) and a durable pull consumer with explicit acks, read by `consume()` (a pull
 * always waiting at the server, so a stored message is delivered at once); each message's payload
 * is a job id, its handler calls `seen(id, sharedNow())` and acks. Answers how to stop it. The
 * stream and its consumer are named `stream` (pickupFloor.ts names its own).
 */
export const startBareJetStream = async (url: string, prefix: string, seen: (id: string, at: number) => void, stream = `${prefix}bare`) => {
  const nc = await natsConnect({ servers: [url] })
  const jsm = await jetstreamManager(nc)
  await jsm.streams.add({ name: stream, subjects: [stream], retention: RetentionPolicy.Workqueue, storage: StorageType.File })
  await jsm.consumers.add(stream, { durable_name: stream, ack_policy: AckPolicy.Explicit })
  const consumer = await jetstream(nc).consumers.get(stream, stream)
  const messages = await consumer.consume({ max_messages: 1 })
  const done = (async () => {
    for await (const message of messages) {
      seen(message.string(), sharedNow())
      message.ack()
    }
  })()
  return async () => {
    await messages.close()
    await done
    await nc.close()
  }
}

/** Publishes job ids to `startBareJetStream`'s stream on `prefix`, each awaiting its PubAck, as the engine's queue publishes. */
export const bareJetStreamPublisher = async (url: string, prefix: string) => {
  const nc = await natsConnect({ servers: [url] })
  const js = jetstream(nc)
  return {
    publish: (id: string) => js.publish(`${prefix}bare`, id, { msgID: id }),
    close: () => nc.close()
  }
}

/** The parent's messages to a pickup worker process. */
export type ToPickupWorker = { readonly type: "ping" } | { readonly type: "stop" }
/** A pickup worker's messages: its engine is up; a job reached its provider at `at` (sharedNow); a clock reading. */
export type FromPickupWorker =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "seen"; readonly id: string; readonly at: number }
  | { readonly type: "pong"; readonly at: number }
