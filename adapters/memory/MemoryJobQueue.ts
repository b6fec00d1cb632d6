import { Clock, Deferred, Duration, Effect, Layer, Ref } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import { JobQueue, type QueueDelivery } from "../../src/ports/JobQueue.js"

interface Entry {
  readonly receipt: string
  readonly jobId: JobId
  /** The member holding it, until `visibleAt`; null while it waits for its first delivery. */
  holder: string | null
  visibleAt: number
}

/** The queue in this process's memory, for tests and single-process engines: the broker's contract, no broker. */
export const makeMemoryJobQueue = Effect.gen(function*() {
  // In publish order: a Map iterates in insertion order.
  const entries = new Map<string, Entry>()
  let published = 0
  // Completed and replaced on every publish: wakes every member waiting in `receive`.
  const wakeUp = yield* Ref.make(yield* Deferred.make<void>())

  const publish = (jobIds: ReadonlyArray<JobId>) =>
    Effect.gen(function*() {
      for (const jobId of jobIds) {
        const receipt = String(++published)
        entries.set(receipt, { receipt, jobId, holder: null, visibleAt: 0 })
      }
      const next = yield* Deferred.make<void>()
      yield* Deferred.succeed(yield* Ref.getAndSet(wakeUp, next), undefined)
    })

  const consume = ({ name, visibilityMs }: { readonly name: string; readonly visibilityMs: number }) =>
    Effect.sync(() => {
      const take = (max: number, now: number): Array<QueueDelivery> => {
        const taken: Array<QueueDelivery> = []
        for (const entry of entries.values()) {
          if (taken.length >= max) break
          if (entry.holder !== null && entry.visibleAt > now) continue
          entry.holder = name
          entry.visibleAt = now + visibilityMs
          taken.push({ jobId: entry.jobId, receipt: entry.receipt })
        }
        return taken
      }
      /** When the next held entry becomes visible again, if any. */
      const nextVisible = () => {
        let next = Infinity
        for (const entry of entries.values()) if (entry.holder !== null) next = Math.min(next, entry.visibleAt)
        return next
      }
      const receive = (max: number, waitMs: number) =>
        Effect.gen(function*() {
          const until = (yield* Clock.currentTimeMillis) + waitMs
          while (true) {
            const woken = yield* Ref.get(wakeUp)
            const now = yield* Clock.currentTimeMillis
            const taken = take(max, now)
            if (taken.length > 0 || now >= until) return taken
            const sleep = Math.max(1, Math.min(until, nextVisible()) - now)
            yield* Effect.raceFirst(Deferred.await(woken), Effect.sleep(Duration.millis(sleep)))
          }
        })
      const extend = (deliveries: ReadonlyArray<QueueDelivery>) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          for (const delivery of deliveries) {
            const entry = entries.get(delivery.receipt)
            if (entry !== undefined && entry.holder === name) entry.visibleAt = now + visibilityMs
          }
        })
      const ack = (deliveries: ReadonlyArray<QueueDelivery>) =>
        Effect.sync(() => {
          for (const delivery of deliveries) entries.delete(delivery.receipt)
        })
      return { receive, extend, ack }
    })

  return JobQueue.of({ publish, consume })
})

export const layerMemoryJobQueue = Layer.effect(JobQueue, makeMemoryJobQueue)

/** A queue broker in memory, for one process: each call is a queue of its own. */
export const memoryQueue = () => Layer.fresh(layerMemoryJobQueue)
