import { afterAll, describe, expect, it } from "@effect/vitest"
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream"
import { connect } from "@nats-io/transport-node"
import { Effect } from "effect"
import { natsQueue } from "genjobs/nats"
import { randomBytes } from "node:crypto"
import { JobId } from "../../src/domain/ids.js"
import { JobQueue } from "../../src/ports/JobQueue.js"
import { deleteStreams, natsAvailable, TEST_NATS_URL } from "../support/nats.js"
import { queued, receiveAll, runJobQueueConformance } from "./jobQueueSuite.js"

const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => JobId.make(`job_${tag}${i}`))

// Under CI an unreachable NATS throws here and fails the file; elsewhere the suite is skipped.
const available = await natsAvailable()

if (!available) {
  console.warn(`NATS (with JetStream) is not reachable at ${TEST_NATS_URL}: its queue suite is skipped (it fails when CI is set).`)
  describe.skip("nats (server not reachable)", () => {
    it("runs against a NATS server", () => undefined)
  })
} else {
  // Every prefix a test used: its stream (which holds its consumer) is the one thing it made.
  const prefixes = new Set<string>()
  afterAll(() => deleteStreams(TEST_NATS_URL, [...prefixes].map((prefix) => `${prefix}jobs`)))

  runJobQueueConformance("nats", (prefix) => {
    prefixes.add(prefix)
    return natsQueue({ servers: TEST_NATS_URL, tablePrefix: prefix })
  })

  describe("nats: upgrading from the single subject", () => {
    it.live("drains a backlog left on the subject of earlier versions beside the lanes, the old consumer narrowed to it", () =>
      Effect.gen(function*() {
        const prefix = `genjobs_t_${randomBytes(4).toString("hex")}_`
        prefixes.add(prefix)
        const stream = `${prefix}jobs`
        // What an earlier version left: the stream with one subject, its unfiltered durable, two jobs queued.
        const old = ids(2, "old")
        yield* Effect.promise(async () => {
          const nc = await connect({ servers: TEST_NATS_URL })
          try {
            const jsm = await jetstreamManager(nc)
            await jsm.streams.add({ name: stream, subjects: [stream], retention: RetentionPolicy.Workqueue, storage: StorageType.File })
            await jsm.consumers.add(stream, { durable_name: `${prefix}workers`, ack_policy: AckPolicy.Explicit, max_deliver: -1 })
            const js = jetstream(nc)
            for (const id of old) await js.publish(stream, id, { msgID: id })
          } finally {
            await nc.close()
          }
        })
        const fresh = ids(2, "new")
        const got = yield* Effect.gen(function*() {
          const queue = yield* JobQueue
          const consumer = yield* queue.consume({ name: "w", visibilityMs: 600 })
          yield* queue.publish(queued(fresh))
          const got = yield* receiveAll(consumer, 4)
          yield* consumer.ack(got)
          // Acked on both: nothing comes back once the visibility passed.
          expect(yield* receiveAll(consumer, 1, 1_800)).toEqual([])
          return got.map((d) => d.jobId)
        }).pipe(Effect.scoped, Effect.provide(natsQueue({ servers: TEST_NATS_URL, tablePrefix: prefix })))
        expect(new Set(got)).toEqual(new Set([...old, ...fresh]))
      }), 20_000)
  })
}
