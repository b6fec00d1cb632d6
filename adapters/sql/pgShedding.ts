import { Effect, type Fiber, type Scope } from "effect"
import { SqlError } from "effect/sql"
import { StoreBusy } from "../../src/domain/errors.js"
import { expectedWaitMs, observedHoldMs, shedRetryAfterSeconds } from "../../src/domain/storeWait.js"
import { RequestStoreWait } from "../../src/ports/StoreWait.js"

/** One caller queued for a connection. */
interface Waiter {
  /** A place was freed for it: it takes the place when it runs. */
  called: boolean
  /** Set while its fiber is suspended, waiting to be called. */
  wake: ((effect: Effect.Effect<void, SqlError.SqlError>) => void) | undefined
  /** Its bound ran out in the queue: the error it fails with. */
  expired: SqlError.SqlError | undefined
  readonly timer: ReturnType<typeof setTimeout>
}

/**
 * Who may take one of the pool's connections, in which order, and who is shed: the pool
 * (pgPool.ts) is only asked by callers admitted here, never more at once than it has
 * connections, so nobody waits inside it.
 */
export interface PoolAdmission {
  /** Runs `use` once admitted; its place goes to the next caller when it ends, however it ends. */
  readonly admit: <A, E, R>(use: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError.SqlError, R>
  /** Admitted until the scope closes: a transaction's or a stream's connection outlives one effect. */
  readonly admitScoped: Effect.Effect<void, SqlError.SqlError, Scope.Scope>
  /** Callers queued now. */
  readonly waiting: () => number
}

const refused = (message: string, cause: unknown) =>
  new SqlError.SqlError({ reason: new SqlError.ConnectionError({ cause, message, operation: "connect" }) })

/**
 * The SqlError a shed request fails with: its StoreBusy (the 503's Retry-After) is the cause's
 * cause. Also what a submit shed from a batch's queue fails with (jobs/statementBatches.ts).
 */
export const shedBeforeStore = (waitMs: number) => {
  const shed = new StoreBusy({ reason: "store_busy", retryAfterSeconds: shedRetryAfterSeconds(waitMs) })
  return refused("The store is busy: the request was shed before it reached the database", shed)
}

/**
 * Sheds requests the pool cannot serve within their bound (`RequestStoreWait`, given by the HTTP
 * layer), failing their first wait for a connection with StoreBusy, before anything of them
 * reached the database:
 * - at once when the queue in front of them is longer than the pool serves in the bound, from
 *   the hold times it observes (`expectedWaitMs`);
 * - else when the bound runs out in the queue.
 * A request admitted once is under way: never shed, and its later waits queue ahead of requests
 * that have not started, behind others under way, else a burst spends the pool on key lookups
 * whose commits then wait behind the next thousand lookups. Callers outside any request
 * (workers, sweepers) queue with the requests not started, up to the store timeout.
 *
 * A place that frees calls the first caller queued, through the scheduler, and that caller
 * takes it when it runs: every hand-over runs after the one before it returned, so interrupting
 * thousands of queued callers never recurses through them. An interrupted caller leaves the
 * queue, and a place called for it goes to the next one.
 */
export const makePoolAdmission = (options: { readonly connections: number; readonly storeTimeoutMs: number }): PoolAdmission => {
  const { connections, storeTimeoutMs } = options
  let taken = 0
  let holdMs: number | undefined
  // Sets keep insertion order: first come, first served within each.
  const underWay = new Set<Waiter>()
  const notStarted = new Set<Waiter>()
  const waiting = () => underWay.size + notStarted.size
  /** Waiters called that have not taken their place yet: the places freed for them. */
  let calling = 0

  /** Calls waiters of `lane` in order while places are free; answers the places left. */
  const callIn = (lane: Set<Waiter>, fiber: Fiber.Fiber<unknown, unknown>, free: number) => {
    for (const waiter of lane) {
      if (free <= 0) break
      if (waiter.called) continue
      waiter.called = true
      calling++
      free--
      const wake = waiter.wake
      waiter.wake = undefined
      // On the scheduler rather than in this call: each hand-over runs after the one before it returned.
      if (wake !== undefined) fiber.currentDispatcher.scheduleTask(() => wake(Effect.void), 0)
    }
    return free
  }

  /** Calls as many waiters as there are free places, those under way first. */
  const callWaiters = (fiber: Fiber.Fiber<unknown, unknown>) => {
    const free = connections - taken - calling
    if (free > 0 && waiting() > 0) callIn(notStarted, fiber, callIn(underWay, fiber, free))
  }

  const leave = (fiber: Fiber.Fiber<unknown, unknown>, since: number) => {
    taken--
    // Only holds while others wait count: those are what a queue moves at, where a migration's
    // or a lone sweep's long hold on an idle pool is not.
    if (waiting() > 0) holdMs = observedHoldMs(holdMs, performance.now() - since)
    callWaiters(fiber)
  }

  /** Takes a place and runs `admitted` with when it was taken; queues first when none is free. */
  const enter = <A, E, R>(
    admitted: (fiber: Fiber.Fiber<unknown, unknown>, since: number) => Effect.Effect<A, E, R>,
    restore: <AX, EX, RX>(effect: Effect.Effect<AX, EX, RX>) => Effect.Effect<AX, EX, RX>
  ): Effect.Effect<A, E | SqlError.SqlError, R> =>
    Effect.withFiber((fiber) => {
      const wait = fiber.getRef(RequestStoreWait)
      if (taken < connections && waiting() === 0) {
        taken++
        if (wait !== undefined) wait.underWay = true
        return admitted(fiber, performance.now())
      }
      const lane = wait?.underWay === true ? underWay : notStarted
      let boundMs = storeTimeoutMs
      if (wait !== undefined && !wait.underWay) {
        // Never longer than the store timeout: a bound past it waits as workers do.
        boundMs = Math.min(wait.boundMs, storeTimeoutMs)
        const waitMs = expectedWaitMs({ waiting: waiting(), connections, holdMs })
        if (waitMs > boundMs) return Effect.fail(shedBeforeStore(waitMs))
      }
      const waiter: Waiter = {
        called: false,
        wake: undefined,
        expired: undefined,
        timer: setTimeout(() => {
          waiter.expired = lane === notStarted && wait !== undefined
            ? shedBeforeStore(boundMs)
            : refused(`The store gave no connection within ${boundMs} ms`, new Error("timeout exceeded when trying to connect"))
          remove()
          const wake = waiter.wake
          waiter.wake = undefined
          wake?.(Effect.fail(waiter.expired))
        }, boundMs)
      }
      /** Out of the queue; a place called for it and not taken goes to the next one. */
      const remove = () => {
        clearTimeout(waiter.timer)
        if (!lane.delete(waiter) || !waiter.called) return
        calling--
        callWaiters(fiber)
      }
      lane.add(waiter)
      callWaiters(fiber)
      const turn = restore(Effect.callback<void, SqlError.SqlError>((resume) => {
        if (waiter.expired !== undefined) return resume(Effect.fail(waiter.expired))
        // It may have been called before it was suspended.
        if (waiter.called) return resume(Effect.void)
        waiter.wake = resume
        return Effect.sync(() => {
          waiter.wake = undefined
        })
      }))
      const admit = Effect.flatMap(turn, (): Effect.Effect<A, E | SqlError.SqlError, R> => {
        // Its bound ran out after it was called, before it ran: the place went to the next one.
        if (!lane.delete(waiter)) return Effect.fail(waiter.expired!)
        // The place called for it is its own.
        clearTimeout(waiter.timer)
        calling--
        taken++
        if (wait !== undefined) wait.underWay = true
        return admitted(fiber, performance.now())
      })
      return Effect.onExitPrimitive(admit, (exit) => {
        // Interrupted or failed while queued: out of the queue (a no-op once admitted).
        if (exit._tag === "Failure") remove()
        return undefined
      })
    })

  return {
    admit: (use) =>
      Effect.uninterruptibleMask((restore) =>
        enter(
          (fiber, since) =>
            Effect.onExitPrimitive(restore(use), () => {
              leave(fiber, since)
              return undefined
            }, true),
          restore
        )
      ),
    admitScoped: Effect.uninterruptibleMask((restore) =>
      enter((fiber, since) => Effect.addFinalizer(() => Effect.sync(() => leave(fiber, since))), restore)
    ),
    waiting
  }
}
