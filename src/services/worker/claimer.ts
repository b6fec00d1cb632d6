import { Cause, Duration, Effect, Exit, Option, Queue, Random, Ref } from "effect"
import { backoffDelayMs } from "../../domain/backoff.js"
import { aheadBeyond, type BrokerClaims, type Claimed, claimBeside, claimFor, makeWorkerRider, type WorkerRider } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import { startOnIdle, type WorkerPool } from "./pool.js"

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
 * intake; from a broker, while runs are quick, the jobs it may hold ahead too. Uninterruptible
 * from taking the idle fibers to the intake: a drain never strands claimed jobs, nor fibers taken
 * for a claim. With the store as the queue and no limited versions, the claim rides on this
 * worker's completions (`ride`) unless the last one was woken with nothing to ride on: then it
 * claims on its own. None when no fiber is idle and the claim cannot ride: the claimer waits for
 * a fiber then.
 */
const claimForIdle = Effect.fnUntraced(function*(
  deps: Pick<WorkerDeps, "config" | "limits" | "repo">,
  pool: WorkerPool,
  broker: BrokerClaims | undefined,
  riding: Riding | undefined
) {
  if (riding !== undefined && riding.next && !deps.limits.anyLimited()) return Option.some(yield* ride(deps, pool, riding))
  if (riding !== undefined) riding.next = true
  const free = yield* Ref.modify(pool.idle, (idle) => {
    const taken = Math.max(0, Math.min(idle, MAX_CLAIM))
    return [taken, idle - taken] as const
  })
  if (free === 0) return Option.none()
  // From a broker, while runs are quick, the claim also takes the jobs its worker may hold ahead
  // of its fibers (the store's claims take theirs riding on completions): they wait in the ready
  // list for the fibers that free next. Not with limited versions in the plan, as on the store:
  // a limited job claimed ahead would hold its provider's room while it waits.
  const ahead = broker !== undefined && pool.quick && !deps.limits.anyLimited()
    ? Math.max(0, Math.min(MAX_CLAIM - free, pool.ahead - pool.aheadHeld))
    : 0
  const exit = yield* Effect.exit(
    claimFor(deps, broker, pool.nextWorkerId(), free + ahead, deps.config.pollIntervalMs).pipe(
      Effect.map((jobs) => aheadBeyond(jobs, free)),
      Effect.tap((jobs) =>
        Effect.sync(() => {
          // Counted before the intake can start any of them.
          pool.aheadHeld += Math.max(0, jobs.length - free)
          pool.intake(jobs)
        })
      )
    )
  )
  const taken = Exit.isSuccess(exit) ? exit.value.length : 0
  const started = Math.min(taken, free)
  yield* Ref.set(pool.queueDry, Exit.isSuccess(exit) && taken < free + ahead)
  yield* Ref.update(pool.idle, (n) => n + free - started)
  startOnIdle(pool)
  return Option.some({ free: free + ahead, exit, rode: false })
}, Effect.uninterruptible)

/** A claimer's claims riding on completions: its rider, and whether the next claim rides. */
interface Riding extends WorkerRider {
  next: boolean
}

/**
 * A claim riding on this worker's completions: the next completion batch ending one of its jobs
 * claims, in the same write, one job for each fiber it frees and for each fiber idle then
 * (docs/decisions.md, "The ending and the next claim in one statement"). Woken at once when
 * fibers are idle and no completion of its own is on its way: the next claim is then its own.
 * The wait is interruptible (a drain stops it): a claim interrupted after it was sent still
 * settles, and its jobs then reach the intake through the rider. Answers the claim's limit as
 * `free`.
 */
const ride = Effect.fnUntraced(function*(deps: Pick<WorkerDeps, "config" | "limits" | "repo">, pool: WorkerPool, riding: Riding) {
  const exit = yield* Effect.exit(Effect.interruptible(claimBeside(deps, pool.nextWorkerId(), MAX_CLAIM, riding.rider)))
  // Not settled: interrupted (its jobs, if it was sent, reach the intake when it settles), or it
  // failed before it reached the store (a claim's failure: logged, and the store backoff waited).
  const settled = riding.collect(Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause))
  if (Option.isNone(settled)) return { free: 0, exit: Exit.map(exit, (): ReadonlyArray<Claimed> => []), rode: true }
  // Its fibers and the jobs it claimed ahead were counted as it settled (makeWorkerRider).
  const { claimed, outcome } = settled.value
  riding.next = outcome.limit > 0
  pool.intake(claimed)
  yield* Ref.set(pool.queueDry, claimed.length < outcome.limit)
  return { free: outcome.limit, exit: Exit.succeed<ReadonlyArray<Claimed>>(claimed), rode: true }
})

/**
 * One claim, then the wait before the next: for a fiber to free when none was idle, and with
 * the store as the queue, a submit's signal or freed provider room when the claim left fibers
 * idle. With a broker the claim itself waited for deliveries. Answers whether the claim failed
 * (the claimer waits the store backoff then).
 */
const claimOnce = Effect.fnUntraced(function*(
  deps: Pick<WorkerDeps, "config" | "limits" | "repo" | "signal">,
  pool: WorkerPool,
  broker: BrokerClaims | undefined,
  riding: Riding | undefined
) {
  const claimed = yield* claimForIdle(deps, pool, broker, riding)
  if (Option.isNone(claimed)) return yield* Effect.as(Queue.take(pool.freed), false)
  const { exit, free, rode } = claimed.value
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
    // Woken with fibers idle and no completion of this worker on its way, a riding claim would
    // only park and be woken with nothing: the next claim is its own, at once.
    if (riding !== undefined && pool.writing === 0) riding.next = false
  } else if (!rode) {
    // A full claim: more may wait, claimed next once the runs begun here let the loop go. Not
    // after a claim that rode: the next waits for a batch, claiming nothing now, and must be
    // waiting before that batch is taken; woken, it claims for the idle fibers at once.
    yield* yieldToEventLoop
  }
  return false
})

/**
 * The claimer: claims for idle fibers for as long as the worker runs. After failed claims in a
 * row it waits the shared store backoff (`storeRetry`): workers meeting one outage spread their
 * claims, and a store that is back is claimed from soon.
 */
export const claimer = (deps: Pick<WorkerDeps, "config" | "limits" | "repo" | "signal">, pool: WorkerPool, broker: BrokerClaims | undefined): Effect.Effect<never> => {
  // With a broker, deliveries are claimed as they come: no claim rides on completions.
  const riding: Riding | undefined = broker === undefined ? { ...makeWorkerRider(pool, deps.config.leaseMs, MAX_CLAIM), next: true } : undefined
  return Effect.flatMap(Ref.make(0), (failures) =>
    Effect.forever(Effect.flatMap(claimOnce(deps, pool, broker, riding), (failed) =>
      failed
        ? Effect.flatMap(Effect.zip(Ref.getAndUpdate(failures, (n) => n + 1), Random.next), ([n, random]) =>
          Effect.sleep(Duration.millis(backoffDelayMs(deps.config.storeRetry, n, random))))
        : Ref.set(failures, 0))))
}
