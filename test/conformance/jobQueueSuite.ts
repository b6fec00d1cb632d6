import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Fiber, type Layer, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import { AccountId, JobId } from "../../src/domain/ids.js"
import { JobQueue, type QueueConsumer, type QueueDelivery, type QueuedJob } from "../../src/ports/JobQueue.js"

const ids = (n: number, tag = "q") => Array.from({ length: n }, (_, i) => JobId.make(`job_${tag}${String(i).padStart(4, "0")}`))
const jobIdsOf = (deliveries: ReadonlyArray<QueueDelivery>) => deliveries.map((d) => d.jobId)
/** The jobs of `jobIds`, all of one account (one lane), with its weight when given. */
export const queued = (jobIds: ReadonlyArray<JobId>, account = "acc_t", weight?: number): Array<QueuedJob> =>
  jobIds.map((jobId) => ({ jobId, accountId: AccountId.make(account), ...(weight === undefined ? {} : { weight }) }))

/** Receives until `count` deliveries came or `ms` passed (a deadline, not a pause deciding the result). */
export const receiveAll = (consumer: QueueConsumer, count: number, ms = 5_000) =>
  Effect.gen(function*() {
    const got: Array<QueueDelivery> = []
    const until = (yield* Clock.currentTimeMillis) + ms
    while (got.length < count && (yield* Clock.currentTimeMillis) < until) {
      got.push(...(yield* consumer.receive(count - got.length, 200)))
    }
    return got
  })

/** The visibility the suite's members hold deliveries for: short, so redelivery is seen in a test's time. */
const VISIBILITY_MS = 600

/**
 * The behaviour every queue adapter must share. `makeLayer(prefix)` builds the queue of an
 * engine whose names start with `prefix`; each test uses a prefix of its own, so runs sharing
 * a broker never meet.
 */
export const runJobQueueConformance = (
  name: string,
  makeLayer: (prefix: string) => Layer.Layer<JobQueue, unknown>
) => {
  const newPrefix = () => `genjobs_t_${randomBytes(4).toString("hex")}_`
  const test = (title: string, body: (prefix: string) => Effect.Effect<void, unknown, JobQueue | Scope.Scope>, timeout = 20_000) =>
    it.live(title, () => {
      const prefix = newPrefix()
      return Effect.scoped(body(prefix)).pipe(Effect.provide(makeLayer(prefix)))
    }, timeout)
  const member = (memberName: string, visibilityMs = VISIBILITY_MS) =>
    Effect.flatMap(JobQueue, (queue) => queue.consume({ name: memberName, visibilityMs }))

  describe(`${name}: JobQueue`, () => {
    test("delivers what is published, oldest first, at most `max` at a time", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const consumer = yield* member("a")
        const published = ids(7)
        yield* queue.publish(queued(published.slice(0, 4)))
        yield* queue.publish(queued(published.slice(4)))
        const first = yield* receiveAll(consumer, 3)
        expect(jobIdsOf(first)).toEqual(published.slice(0, 3))
        const rest = yield* receiveAll(consumer, 4)
        expect(jobIdsOf(rest)).toEqual(published.slice(3))
        yield* consumer.ack([...first, ...rest])
      }))

    test("waits for a publish and answers as soon as one comes, or empty once waitMs passed", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const consumer = yield* member("a")
        const started = yield* Clock.currentTimeMillis
        expect(yield* consumer.receive(5, 300)).toEqual([])
        expect((yield* Clock.currentTimeMillis) - started).toBeGreaterThanOrEqual(250)
        const waiting = yield* Effect.forkChild(consumer.receive(5, 10_000))
        const [id] = ids(1)
        yield* Effect.sleep("100 millis")
        const publishedAt = yield* Clock.currentTimeMillis
        yield* queue.publish(queued([id!]))
        const got = yield* Fiber.join(waiting)
        expect(jobIdsOf(got)).toEqual([id])
        // Woken by the publish, not by the end of its wait.
        expect((yield* Clock.currentTimeMillis) - publishedAt).toBeLessThan(2_000)
      }))

    test("never hands one delivery to two members at once, and every one to some member", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const a = yield* member("a")
        const b = yield* member("b")
        const published = ids(40)
        yield* queue.publish(queued(published))
        const [fromA, fromB] = yield* Effect.all([receiveAll(a, 20), receiveAll(b, 20)], { concurrency: 2 })
        const all = [...jobIdsOf(fromA), ...jobIdsOf(fromB)]
        expect(new Set(all).size).toBe(all.length)
        const more = yield* receiveAll(a, 40 - all.length, 1_000)
        expect(new Set([...all, ...jobIdsOf(more)])).toEqual(new Set(published))
      }))

    test("an acked delivery is never delivered again", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const a = yield* member("a")
        const b = yield* member("b")
        yield* queue.publish(queued(ids(2)))
        const got = yield* receiveAll(a, 2)
        yield* a.ack(got)
        // Past the visibility: an unacked delivery would be back by now.
        expect(yield* receiveAll(b, 1, VISIBILITY_MS * 3)).toEqual([])
      }))

    test("a delivery neither acked nor extended goes to another member once its visibility passes", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const dead = yield* member("dead")
        const alive = yield* member("alive")
        const [id] = ids(1)
        yield* queue.publish(queued([id!]))
        expect(jobIdsOf(yield* receiveAll(dead, 1))).toEqual([id])
        const heldAt = yield* Clock.currentTimeMillis
        const again = yield* receiveAll(alive, 1, VISIBILITY_MS * 10)
        expect(jobIdsOf(again)).toEqual([id])
        expect((yield* Clock.currentTimeMillis) - heldAt).toBeGreaterThanOrEqual(VISIBILITY_MS - 50)
        yield* alive.ack(again)
      }))

    test("an extended delivery stays with its member while it keeps extending", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const holder = yield* member("holder")
        const other = yield* member("other")
        yield* queue.publish(queued(ids(1)))
        const held = yield* receiveAll(holder, 1)
        expect(held).toHaveLength(1)
        const keeper = yield* Effect.forkChild(Effect.forever(holder.extend(held).pipe(Effect.andThen(Effect.sleep(VISIBILITY_MS / 4)))))
        expect(yield* receiveAll(other, 1, VISIBILITY_MS * 3)).toEqual([])
        yield* Fiber.interrupt(keeper)
        expect(jobIdsOf(yield* receiveAll(other, 1, VISIBILITY_MS * 10))).toEqual(jobIdsOf(held))
      }))

    test("a late extend does not take back a delivery another member got after its visibility passed", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const late = yield* member("late")
        const next = yield* member("next")
        const third = yield* member("third")
        const [id] = ids(1)
        yield* queue.publish(queued([id!]))
        const first = yield* receiveAll(late, 1)
        expect(jobIdsOf(first)).toEqual([id])
        // Its visibility passes: "next" gets it, then goes silent (dies) without extending it.
        expect(jobIdsOf(yield* receiveAll(next, 1, VISIBILITY_MS * 10))).toEqual([id])
        // "late" wakes up and keeps extending the delivery it lost: that must not keep it from
        // going on once "next"'s visibility passes, as it would if the extends took it back.
        const zombie = yield* Effect.forkChild(Effect.forever(late.extend(first).pipe(Effect.andThen(Effect.sleep(VISIBILITY_MS / 4)))))
        const again = yield* receiveAll(third, 1, VISIBILITY_MS * 10)
        yield* Fiber.interrupt(zombie)
        expect(jobIdsOf(again)).toEqual([id])
        yield* third.ack(again)
      }))

    test("an id published twice reaches members at least once, and acking each delivery ends both", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const a = yield* member("a")
        const [id] = ids(1)
        yield* queue.publish(queued([id!]))
        yield* queue.publish(queued([id!]))
        const got = yield* receiveAll(a, 2, 1_500)
        expect(got.length).toBeGreaterThanOrEqual(1)
        expect(new Set(jobIdsOf(got))).toEqual(new Set([id]))
        yield* a.ack(got)
        expect(yield* receiveAll(a, 1, VISIBILITY_MS * 3)).toEqual([])
      }))
  })

  describe(`${name}: JobQueue fair shares`, () => {
    /** Receives `count` deliveries `max` at a time, acking each batch (the order handed out). */
    const drainInOrder = (consumer: QueueConsumer, count: number, max: number) =>
      Effect.gen(function*() {
        const got: Array<QueueDelivery> = []
        const until = (yield* Clock.currentTimeMillis) + 15_000
        while (got.length < count && (yield* Clock.currentTimeMillis) < until) {
          const some = yield* consumer.receive(Math.min(max, count - got.length), 200)
          yield* consumer.ack(some)
          got.push(...some)
        }
        return jobIdsOf(got)
      })

    for (const max of [1, 3]) {
      test(`an account's late jobs start in turn with a long backlog of another's, ${max} at a time (B's k-th within the first 2k)`, () =>
        Effect.gen(function*() {
          const queue = yield* JobQueue
          const consumer = yield* member("a")
          const fromA = ids(200, "a")
          const fromB = ids(10, "b")
          yield* queue.publish(queued(fromA, "acc_a"))
          yield* queue.publish(queued(fromB, "acc_b"))
          const order = yield* drainInOrder(consumer, 40, max)
          const bs = order.filter((id) => fromB.includes(id))
          expect(bs).toEqual(fromB)
          bs.forEach((id, k) => expect(order.indexOf(id)).toBeLessThan(2 * (k + 1)))
          // First in, first out within each lane.
          expect(order.filter((id) => fromA.includes(id))).toEqual(fromA.slice(0, 30))
        }), 30_000)
    }

    test("gives an account of weight w w turns to another's one", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const consumer = yield* member("a")
        yield* queue.publish(queued(ids(30, "a"), "acc_a", 3))
        yield* queue.publish(queued(ids(30, "b"), "acc_b", 1))
        const order = yield* drainInOrder(consumer, 16, 1)
        expect(order.map((id) => id.slice(4, 5)).join("")).toBe("aaabaaabaaabaaab")
      }))

    test("keeps the weight a lane has when a job comes without one (a republish)", () =>
      Effect.gen(function*() {
        const queue = yield* JobQueue
        const consumer = yield* member("a")
        yield* queue.publish(queued(ids(10, "a"), "acc_a", 2))
        yield* queue.publish(queued(ids(10, "x"), "acc_a"))
        yield* queue.publish(queued(ids(20, "b"), "acc_b"))
        const order = yield* drainInOrder(consumer, 9, 1)
        expect(order.map((id) => (id.startsWith("job_b") ? "b" : "a")).join("")).toBe("aabaabaab")
      }))
  })

  describe(`${name}: JobQueue names`, () => {
    it.live("two engines with other prefixes on one broker never see each other's jobs", () =>
      Effect.gen(function*() {
        const [one, two] = [newPrefix(), newPrefix()]
        const publishAndTake = (prefix: string, tag: string) =>
          Effect.scoped(Effect.gen(function*() {
            const queue = yield* JobQueue
            const consumer = yield* queue.consume({ name: "w", visibilityMs: VISIBILITY_MS })
            yield* queue.publish(queued(ids(3, tag)))
            // Everything this engine's member gets in a second, each acked at once (never redelivered).
            const got: Array<QueueDelivery> = []
            const until = (yield* Clock.currentTimeMillis) + 1_000
            while ((yield* Clock.currentTimeMillis) < until) {
              const some = yield* consumer.receive(10, 200)
              yield* consumer.ack(some)
              got.push(...some)
            }
            return jobIdsOf(got)
          })).pipe(Effect.provide(makeLayer(prefix)))
        const [fromOne, fromTwo] = yield* Effect.all([publishAndTake(one, "one"), publishAndTake(two, "two")], { concurrency: 2 })
        expect(fromOne).toEqual(ids(3, "one"))
        expect(fromTwo).toEqual(ids(3, "two"))
      }), 20_000)
  })
}
