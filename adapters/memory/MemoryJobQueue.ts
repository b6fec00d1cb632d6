import { Clock, Deferred, Duration, Effect, Layer, Ref } from "effect"
import { fairPick, type FairLane, type FairTurn } from "../../src/domain/fairPick.js"
import { clampWeight } from "../../src/domain/fairShare.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobQueue, type QueueDelivery, type QueuedJob } from "../../src/ports/JobQueue.js"

interface Entry {
  readonly receipt: string
  readonly jobId: JobId
  readonly lane: string
  /** The member holding it, until `visibleAt`; null while it waits for its first delivery. */
  holder: string | null
  visibleAt: number
}

/** An account's lane: its entries in publish order (a Map iterates in insertion order). */
interface Lane {
  weight: number
  readonly entries: Map<string, Entry>
}

/**
 * The queue in this process's memory, for tests and single-process engines: the broker's contract,
 * no broker. One lane per account, dropped once empty; each member picks among the lanes' visible
 * entries in fair shares (`fairPick`).
 */
export const makeMemoryJobQueue = Effect.gen(function*() {
  const lanes = new Map<string, Lane>()
  // Every entry by its receipt, for extend and ack.
  const entries = new Map<string, Entry>()
  let published = 0
  // Completed and replaced on every publish: wakes every member waiting in `receive`.
  const wakeUp = yield* Ref.make(yield* Deferred.make<void>())

  const publish = (jobs: ReadonlyArray<QueuedJob>) =>
    Effect.gen(function*() {
      for (const { accountId, jobId, weight } of jobs) {
        const receipt = String(++published)
        let lane = lanes.get(accountId)
        if (lane === undefined) lanes.set(accountId, lane = { weight: 1, entries: new Map() })
        if (weight !== undefined) lane.weight = clampWeight(weight)
        const entry: Entry = { receipt, jobId, lane: accountId, holder: null, visibleAt: 0 }
        lane.entries.set(receipt, entry)
        entries.set(receipt, entry)
      }
      const next = yield* Deferred.make<void>()
      yield* Deferred.succeed(yield* Ref.getAndSet(wakeUp, next), undefined)
    })

  const consume = ({ name, visibilityMs }: { readonly name: string; readonly visibilityMs: number }) =>
    Effect.sync(() => {
      let turn: FairTurn | undefined
      const take = (max: number, now: number): Array<QueueDelivery> => {
        // Each lane's first `max` visible entries are its heads: a pick takes no more of one lane.
        const heads: Array<FairLane<Entry>> = []
        for (const [id, lane] of lanes) {
          const visible: Array<Entry> = []
          for (const entry of lane.entries.values()) {
            if (visible.length >= max) break
            if (entry.holder === null || entry.visibleAt <= now) visible.push(entry)
          }
          heads.push({ id, weight: lane.weight, heads: visible })
        }
        const pick = fairPick(turn, heads, max)
        turn = pick.turn
        return pick.picked.map((entry) => {
          entry.holder = name
          entry.visibleAt = now + visibilityMs
          return { jobId: entry.jobId, receipt: entry.receipt }
        })
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
          for (const delivery of deliveries) {
            const entry = entries.get(delivery.receipt)
            if (entry === undefined) continue
            entries.delete(delivery.receipt)
            const lane = lanes.get(entry.lane)
            lane?.entries.delete(delivery.receipt)
            // An idle lane is dropped: a publish makes it again.
            if (lane?.entries.size === 0) lanes.delete(entry.lane)
          }
        })
      return { receive, extend, ack }
    })

  return JobQueue.of({ publish, consume })
})

export const layerMemoryJobQueue = Layer.effect(JobQueue, makeMemoryJobQueue)

/** A queue broker in memory, for one process: each call is a queue of its own. */
export const memoryQueue = () => Layer.fresh(layerMemoryJobQueue)
