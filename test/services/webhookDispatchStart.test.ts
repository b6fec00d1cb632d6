import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Exit, Fiber, Option, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { WebhookDelivery } from "../../src/domain/webhook.js"
import type { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { defaultEngineSettings } from "../../src/services/EngineConfig.js"
import type { DispatchDeps } from "../../src/services/webhookDispatch/deps.js"
import { start } from "../../src/services/webhookDispatch/start.js"
import { startedFibers } from "../support/fiberCount.js"

/**
 * How a dispatcher runs: its claims' size, its attempts' fibers. How a dispatcher sizes its claims. A claim costs about the same whatever it takes (on
 * PostgreSQL, its round trips under the claims' lock), so through a backlog each claim should
 * carry every slot the attempts of the last one free, not the first slot freed and then the rest.
 * Claims here take CLAIM_MS of the test clock; an attempt's send takes the milliseconds its URL
 * names.
 */
const CLAIM_MS = 10

const delivery = (id: string, sendMs: number, accountId = "acc_1"): WebhookDelivery => ({
  id,
  jobId: `job_${id}`,
  accountId,
  url: `http://127.0.0.1/${sendMs}`,
  payload: "{}",
  status: "pending",
  attempts: [],
  nextAttemptAt: 0,
  leaseOwner: "whd_test",
  leaseExpiresAt: 60_000,
  createdAt: 0
})

interface Claimed {
  readonly at: number
  readonly asked: number
  readonly got: number
}

/**
 * A dispatcher's dependencies over a backlog (`take` answers each claim's deliveries), and what
 * each claim asked and got. Each attempt's record takes `recordMs`; `recorded` holds when each
 * ended. `claimsBesideRecords`: the store's, as WebhookDeliveryRepo tells it.
 */
const dispatchingWith = ({ claimsBesideRecords = false, recordMs = 0 }: { readonly claimsBesideRecords?: boolean; readonly recordMs?: number }) =>
  Effect.gen(function*() {
    const claims: Array<Claimed> = []
    const recorded: Array<number> = []
    const signals = yield* Queue.sliding<void>(1)
    let backlog: Array<WebhookDelivery> = []
    const deliveries = {
      claimsBesideRecords,
      nextAttemptAfter: () => Effect.succeed(Option.none<number>()),
      recordAttempt: () =>
        Effect.gen(function*() {
          if (recordMs > 0) yield* Effect.sleep(recordMs)
          recorded.push(yield* Clock.currentTimeMillis)
          return true
        })
    } as Partial<WebhookDeliveryRepo["Service"]> as WebhookDeliveryRepo["Service"]
    const deps: DispatchDeps = {
      deliveries,
      signingAccount: () => Effect.succeed(Option.none()),
      sender: {
        send: (request) =>
          Effect.as(Effect.sleep(Number(new URL(request.url).pathname.slice(1))), { statusCode: 200, retryAfter: undefined, body: "" })
      },
      signal: {
        notify: Queue.offer(signals, undefined),
        wait: (maxMs) => Effect.asVoid(Effect.timeoutOption(Queue.take(signals), maxMs))
      },
      config: defaultEngineSettings,
      leaseMs: 60_000,
      claim: (_workerId, limit) =>
        Effect.gen(function*() {
          const at = yield* Clock.currentTimeMillis
          yield* Effect.sleep(CLAIM_MS)
          const taken = backlog.slice(0, limit)
          backlog = backlog.slice(limit)
          claims.push({ at, asked: limit, got: taken.length })
          return taken
        })
    }
    /** Deliveries due from the start, before the dispatcher runs. */
    const seed = (due: ReadonlyArray<WebhookDelivery>) => Effect.sync(() => (backlog = [...due]))
    /** A delivery that fell due meanwhile, signalled as a job's ending signals it. */
    const add = (more: ReadonlyArray<WebhookDelivery>) =>
      Effect.andThen(Effect.sync(() => (backlog = [...backlog, ...more])), deps.signal.notify)
    return { add, claims, deps, recorded, seed }
  })

const dispatching = dispatchingWith({})

const run = (ms: number) => Effect.forEach(Array.from({ length: ms }), () => TestClock.adjust(1), { discard: true })

describe("webhook dispatcher claims", () => {
  it.effect("through a backlog, each claim takes every slot the last claim's attempts freed", () =>
    Effect.scoped(Effect.gen(function*() {
      const { claims, deps, seed } = yield* dispatching
      // Each claim's four attempts end 1, 2, 3 and 4 ms after it.
      yield* seed(Array.from({ length: 40 }, (_, i) => delivery(`d${i}`, 1 + (i % 4))))
      yield* start(deps)(4)
      yield* run(300)
      // Claiming at the first free slot, the claims took 4, 1, 3, 1, 3, ...: two claims a round.
      expect(claims.slice(0, 11).map((c) => [c.asked, c.got])).toEqual([
        ...Array.from({ length: 10 }, () => [4, 4]),
        [4, 0]
      ])
      // Each claim waited for the last one's attempts: the slowest ends 4 ms after its claim.
      expect(claims.slice(1, 10).map((c, i) => c.at - claims[i]!.at)).toEqual(Array.from({ length: 9 }, () => CLAIM_MS + 4))
    })))

  it.effect("waits no longer than the last claim took, for attempts slower than that", () =>
    Effect.scoped(Effect.gen(function*() {
      const { claims, deps, seed } = yield* dispatching
      // Three attempts of each claim end 1 ms after it, the fourth 200 ms after.
      yield* seed(Array.from({ length: 8 }, (_, i) => delivery(`d${i}`, i % 4 === 3 ? 200 : 1)))
      yield* start(deps)(4)
      // Every attempt ends before the scope closes (its close waits for them).
      yield* run(300)
      // The three freed slots, 1 ms after the first claim, wait as long as it took, not for the fourth.
      expect(claims.slice(0, 2)).toEqual([
        { at: 0, asked: 4, got: 4 },
        { at: CLAIM_MS + 1 + CLAIM_MS, asked: 3, got: 3 }
      ])
    })))

  it.effect("claims at once when the last claim found fewer due than it asked for", () =>
    Effect.scoped(Effect.gen(function*() {
      const { add, claims, deps, seed } = yield* dispatching
      yield* seed([delivery("d0", 100), delivery("d1", 100)])
      yield* start(deps)(4)
      yield* run(30)
      // Two attempts on their way; a new delivery is claimed as it is signalled, not after them.
      yield* add([delivery("d2", 1)])
      yield* run(200)
      expect(claims.slice(0, 2)).toEqual([
        { at: 0, asked: 4, got: 2 },
        { at: 30, asked: 2, got: 1 }
      ])
    })))

  /** Each claim's start after the one before it, through a backlog of 16 over `accounts` (4 slots; records take 8 ms). */
  const claimGaps = (claimsBesideRecords: boolean, accounts: number) =>
    Effect.scoped(Effect.gen(function*() {
      const { claims, deps, seed } = yield* dispatchingWith({ claimsBesideRecords, recordMs: 8 })
      yield* seed(Array.from({ length: 16 }, (_, i) => delivery(`d${i}`, 1, `acc_${i % accounts}`)))
      yield* start(deps)(4)
      yield* run(200)
      expect(claims.slice(0, 4).map((c) => c.got)).toEqual([4, 4, 4, 4])
      return claims.slice(1, 4).map((c, i) => c.at - claims[i]!.at)
    }))

  it.effect("where the store records beside claims, a claim in a backlog runs while the last claim's outcomes are recorded", () =>
    Effect.gen(function*() {
      // The next claim as the last one's attempts are sent (1 ms), not after their records (8 ms more).
      expect(yield* claimGaps(true, 4)).toEqual([CLAIM_MS + 1, CLAIM_MS + 1, CLAIM_MS + 1])
      // Where the store writes one thing at a time, the claim waits for the records, as it did.
      expect(yield* claimGaps(false, 4)).toEqual([CLAIM_MS + 1 + 8, CLAIM_MS + 1 + 8, CLAIM_MS + 1 + 8])
    }))

  it.effect("a claim that gave each of its accounts the cap keeps its slots until the records", () =>
    Effect.gen(function*() {
      // Four of one account, its cap: a claim before their records would find it still at the cap.
      expect(yield* claimGaps(true, 1)).toEqual([CLAIM_MS + 1 + 8, CLAIM_MS + 1 + 8, CLAIM_MS + 1 + 8])
    }))

  it.effect("closing waits for the outcomes still being recorded after their slots came back", () =>
    Effect.gen(function*() {
      const { claims, deps, recorded, seed } = yield* dispatchingWith({ claimsBesideRecords: true, recordMs: 40 })
      yield* seed(Array.from({ length: 4 }, (_, i) => delivery(`d${i}`, 1, `acc_${i}`)))
      const scope = yield* Scope.make()
      yield* start(deps)(4).pipe(Scope.provide(scope))
      // The claim ends at CLAIM_MS and the sends 1 ms later, which gives the slots back; the next
      // claim finds nothing, and the records take until CLAIM_MS + 41.
      yield* run(2 * CLAIM_MS + 5)
      expect(claims.map((c) => c.got)).toEqual([4, 0])
      expect(recorded).toEqual([])
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* run(5)
      expect(closing.pollUnsafe()).toBeUndefined()
      yield* run(30)
      yield* Fiber.join(closing)
      expect(recorded).toEqual([CLAIM_MS + 41, CLAIM_MS + 41, CLAIM_MS + 41, CLAIM_MS + 41])
    }))

  /** The fibers a dispatcher of 16 slots starts to send `n` deliveries, each answered in 1 ms. */
  const fibersToSend = (n: number) =>
    Effect.scoped(Effect.gen(function*() {
      const { claims, deps, seed } = yield* dispatching
      yield* seed(Array.from({ length: n }, (_, i) => delivery(`d${i}`, 1)))
      const { count, counter } = startedFibers()
      yield* start(deps)(16).pipe(count)
      while (claims.reduce((sum, c) => sum + c.got, 0) < n) yield* run(10)
      // The last attempts end, and the claim that finds nothing due: the claimer then waits idle.
      yield* run(30)
      return counter.started
    }))

  it.effect("sends 400 deliveries on the fibers it sends 40 on, but for the claims' holds: an attempt is data on a runner", () =>
    Effect.gen(function*() {
      const few = yield* fibersToSend(40)
      const many = yield* fibersToSend(400)
      // The 16 runners, the keeper and the claimer; then each claim's hold (a wait for the last
      // claim's attempts bounded by a timer, two fibers) and the waits once nothing is due. With a
      // fiber per attempt and a race for its deadline it was four more a delivery.
      expect(few).toBeGreaterThanOrEqual(18)
      expect(many - few).toBeLessThan((400 - 40) / 4)
    }))
})
