import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { redisQueue } from "genjobs/redis"
import { randomBytes } from "node:crypto"
import { JobId } from "../../src/domain/ids.js"
import { JobQueue } from "../../src/ports/JobQueue.js"
import { deleteKeysMatching, redisAvailable, TEST_REDIS_URL, withRedis } from "../support/redis.js"
import { queued, receiveAll } from "./jobQueueSuite.js"

// Under CI an unreachable Redis throws here and fails the file; elsewhere the tests are skipped.
const available = await redisAvailable()

const prefixes: Array<string> = []
const newPrefix = () => {
  const prefix = `genjobs_t_${randomBytes(4).toString("hex")}_`
  prefixes.push(prefix)
  return prefix
}
afterAll(() => (available ? deleteKeysMatching(TEST_REDIS_URL, prefixes.map((prefix) => `${prefix}*`)) : undefined))

const keysOf = (prefix: string) =>
  Effect.promise(() =>
    withRedis(TEST_REDIS_URL, async (client) => {
      const keys: Array<string> = []
      for await (const some of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1_000 })) keys.push(...some)
      return keys.sort()
    })
  )

describe.skipIf(!available)("redis: the queue's lanes", () => {
  it.live("drains the one stream of versions before the lanes, beside the lanes (an upgrade with a backlog loses nothing)", () => {
    const prefix = newPrefix()
    const old = Array.from({ length: 5 }, (_, i) => JobId.make(`job_old${i}`))
    return Effect.gen(function*() {
      // What an engine of an earlier version left: its stream, its group, entries not yet delivered.
      yield* Effect.promise(() =>
        withRedis(TEST_REDIS_URL, async (client) => {
          await client.xGroupCreate(`${prefix}jobs`, `${prefix}workers`, "0", { MKSTREAM: true })
          for (const id of old) await client.xAdd(`${prefix}jobs`, "*", { job: id })
        })
      )
      const queue = yield* JobQueue
      const consumer = yield* queue.consume({ name: "w", visibilityMs: 5_000 })
      const fresh = [JobId.make("job_new0"), JobId.make("job_new1")]
      yield* queue.publish(queued(fresh, "acc_new"))
      const got = yield* receiveAll(consumer, 7)
      expect(new Set(got.map((d) => d.jobId))).toEqual(new Set([...old, ...fresh]))
      // First in, first out within the old stream too.
      expect(got.map((d) => d.jobId).filter((id) => old.includes(id))).toEqual(old)
      yield* consumer.ack(got)
      expect(yield* receiveAll(consumer, 1, 500)).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(redisQueue({ url: TEST_REDIS_URL, tablePrefix: prefix })))
  }, 20_000)

  it.live("drops an account's lane once all its jobs are acked, and makes it again on its next publish", () => {
    const prefix = newPrefix()
    return Effect.gen(function*() {
      const queue = yield* JobQueue
      const consumer = yield* queue.consume({ name: "w", visibilityMs: 5_000 })
      yield* queue.publish(queued([JobId.make("job_a0"), JobId.make("job_a1")], "acc_a", 4))
      yield* queue.publish(queued([JobId.make("job_b0")], "acc_b"))
      expect(yield* keysOf(prefix)).toEqual([`${prefix}jobs:acc_a`, `${prefix}jobs:acc_b`, `${prefix}lanes`, `${prefix}lanes:bell`])
      const got = yield* receiveAll(consumer, 3)
      yield* consumer.ack(got.filter((d) => d.jobId === "job_b0"))
      // acc_b is idle: gone, stream, group and registry field; acc_a still holds a job in flight.
      expect(yield* keysOf(prefix)).toEqual([`${prefix}jobs:acc_a`, `${prefix}lanes`, `${prefix}lanes:bell`])
      yield* consumer.ack(got.filter((d) => d.jobId !== "job_b0"))
      expect(yield* keysOf(prefix)).toEqual([`${prefix}lanes:bell`])
      yield* queue.publish(queued([JobId.make("job_b1")], "acc_b"))
      const again = yield* receiveAll(consumer, 1)
      expect(again.map((d) => d.jobId)).toEqual(["job_b1"])
      yield* consumer.ack(again)
      expect(yield* keysOf(prefix)).toEqual([`${prefix}lanes:bell`])
    }).pipe(Effect.scoped, Effect.provide(redisQueue({ url: TEST_REDIS_URL, tablePrefix: prefix })))
  }, 20_000)

  it.live("a member whose receives stop hands back what it holds within seconds, not at its visibility", () => {
    const prefix = newPrefix()
    return Effect.gen(function*() {
      const queue = yield* JobQueue
      const visibilityMs = 60_000
      const busy = yield* queue.consume({ name: "busy", visibilityMs })
      const idle = yield* queue.consume({ name: "idle", visibilityMs })
      const ids = Array.from({ length: 6 }, (_, i) => JobId.make(`job_a${i}`))
      yield* queue.publish(queued(ids.slice(0, 3), "acc_a"))
      yield* queue.publish(queued(ids.slice(3), "acc_b"))
      // Its one runner takes a job and stays busy: no receive, no extend for a long while.
      const running = yield* busy.receive(1, 1_000)
      expect(running).toHaveLength(1)
      const started = Date.now()
      const got = yield* receiveAll(idle, 5, 10_000)
      expect(new Set(got.map((d) => d.jobId))).toEqual(new Set(ids.filter((id) => id !== running[0]!.jobId)))
      expect(Date.now() - started).toBeLessThan(5_000)
    }).pipe(Effect.scoped, Effect.provide(redisQueue({ url: TEST_REDIS_URL, tablePrefix: prefix })))
  }, 20_000)

  it.live("hands a busy member's heads back: another member gets them well before the visibility passes", () => {
    const prefix = newPrefix()
    return Effect.gen(function*() {
      const queue = yield* JobQueue
      const visibilityMs = 6_000
      const busy = yield* queue.consume({ name: "busy", visibilityMs })
      const idle = yield* queue.consume({ name: "idle", visibilityMs })
      yield* queue.publish(queued([JobId.make("job_a0"), JobId.make("job_a1")], "acc_a"))
      yield* queue.publish(queued([JobId.make("job_b0")], "acc_b"))
      // One job to run: the member reads a head of each lane and gives out one.
      const running = yield* busy.receive(1, 1_000)
      expect(running).toHaveLength(1)
      // Its job runs on; its extends, past a third of the visibility, hand back the heads it held.
      yield* Effect.sleep(visibilityMs / 3 + 100)
      yield* busy.extend(running)
      const started = Date.now()
      const got = yield* receiveAll(idle, 2, 3_000)
      expect(new Set(got.map((d) => d.jobId))).toEqual(new Set(["job_a0", "job_a1", "job_b0"].filter((id) => id !== running[0]!.jobId)))
      expect(Date.now() - started).toBeLessThan(visibilityMs / 2)
    }).pipe(Effect.scoped, Effect.provide(redisQueue({ url: TEST_REDIS_URL, tablePrefix: prefix })))
  }, 20_000)
})
