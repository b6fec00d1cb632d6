import { Cause, Duration, Effect, Exit, Option, Queue, Random, Ref } from "effect"
import { backoffDelayMs } from "../../domain/backoff.js"
import { type BrokerClaims, claimFor } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import type { WorkerPool } from "./pool.js"

/**
 * The most jobs one claim takes. A worker with thousands of idle fibers would otherwise claim
 * thousands at once: one statement (synchronous on SQLite), thousands of rows decoded, and
 * thousands of runs begun in one turn of the event loop, which would hold it for seconds while
 * provider answers wait. A claim this size stays within a few tens of milliseconds.
 */
export const MAX_CLAIM = 100

/** Lets the event loop run (I/O, timers) before the next claim: a microtask yield would not. */
const yieldToEventLoop = Effect.callback<void>((resume) => {
  const pending = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(pending))
})

/**
 * Claims as many jobs as there are idle fibers, MAX_CLAIM at most, in one claim, into the
 * buffer. Uninterruptible from taking the idle fibers to the buffer: a drain never strands
 * claimed jobs, nor fibers taken for a claim. None when every fiber is busy or promised.
 */
const claimForIdle = Effect.fnUntraced(function*(deps: Pick<WorkerDeps, "config" | "limits" | "repo">, pool: WorkerPool, broker: BrokerClaims | undefined) {
  const free = yield* Ref.modify(pool.idle, (idle) => [Math.min(idle, MAX_CLAIM), idle - Math.min(idle, MAX_CLAIM)] as const)
  if (free === 0) return Option.none()
  const exit = yield* Effect.exit(
    claimFor(deps, broker, pool.nextWorkerId(), free, deps.config.pollIntervalMs).pipe(Effect.tap((jobs) => Queue.offerAll(pool.buffer, jobs)))
  )
  const taken = Exit.isSuccess(exit) ? exit.value.length : 0
  yield* Ref.set(pool.queueDry, Exit.isSuccess(exit) && taken < free)
  yield* Ref.update(pool.idle, (n) => n + free - taken)
  return Option.some({ free, exit })
}, Effect.uninterruptible)

/**
 * One claim, then the wait before the next: for a fiber to free when none was idle, and with
 * the store as the queue, a submit's signal or freed provider room when the claim left fibers
 * idle. With a broker the claim itself waited for deliveries. Answers whether the claim failed
 * (the claimer waits the store backoff then).
 */
const claimOnce = Effect.fnUntraced(function*(deps: Pick<WorkerDeps, "config" | "limits" | "repo" | "signal">, pool: WorkerPool, broker: BrokerClaims | undefined) {
  const claimed = yield* claimForIdle(deps, pool, broker)
  if (Option.isNone(claimed)) return yield* Effect.as(Queue.take(pool.freed), false)
  const { exit, free } = claimed.value
  if (Exit.isFailure(exit)) {
    yield* Effect.logError(broker === undefined ? "worker could not reach the store" : "worker could not reach the store or the queue", Cause.pretty(exit.cause))
    return true
  } else if (exit.value.length < free && broker === undefined) {
    // The queue ran dry, or what is left waits for provider room: a submit signals, a
    // limited job ending here frees room, and the poll covers a lost signal and room
    // freed in other processes. Without limits no end frees room: the wait is the signal's
    // alone, with no race (and its two fibers) per wait. A limit added meanwhile counts from
    // the next wait (its room freed meanwhile is kept: roomFreed holds the last offer).
    yield* deps.limits.anyLimited()
      ? Effect.raceFirst(deps.signal.wait(deps.config.pollIntervalMs), Queue.take(pool.roomFreed))
      : deps.signal.wait(deps.config.pollIntervalMs)
  } else {
    // A full claim: more may wait, claimed next once the runs begun here let the loop go.
    yield* yieldToEventLoop
  }
  return false
})

/**
 * The claimer: claims for idle fibers for as long as the worker runs. After failed claims in a
 * row it waits the shared store backoff (`storeRetry`): workers meeting one outage spread their
 * claims, and a store that is back is claimed from soon.
 */
export const claimer = (deps: Pick<WorkerDeps, "config" | "limits" | "repo" | "signal">, pool: WorkerPool, broker: BrokerClaims | undefined): Effect.Effect<never> =>
  Effect.flatMap(Ref.make(0), (failures) =>
    Effect.forever(Effect.flatMap(claimOnce(deps, pool, broker), (failed) =>
      failed
        ? Effect.flatMap(Effect.zip(Ref.getAndUpdate(failures, (n) => n + 1), Random.next), ([n, random]) =>
          Effect.sleep(Duration.millis(backoffDelayMs(deps.config.storeRetry, n, random))))
        : Ref.set(failures, 0))))
