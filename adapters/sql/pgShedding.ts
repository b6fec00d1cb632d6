import { Effect, type Fiber, type Scope } from "effect"
import { SqlError } from "effect/sql"
import { StoreBusy } from "../../src/domain/errors.js"
import { expectedWaitMs, observedHoldMs, shedRetryAfterSeconds } from "../../src/domain/storeWait.js"
import { RequestStoreWait } from "../../src/ports/StoreWait.js"

/** One caller queued for a connection. */
interface Waiter {
  /** Set while its fiber is suspended, waiting to be woken. */
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

/** The SqlError a shed request fails with: its StoreBusy (the 503's Retry-After) is the cause's cause. */
const busy = (waitMs: number) => {
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
 * A place that frees wakes the first caller queued, through the scheduler, and that caller
 * takes it when it runs: every hand-over runs after the one before it returned, so interrupting
 * thousands of queued callers never recurses through them. An interrupted caller leaves the
 * queue; nothing is held for it.
 */
export const makePoolAdmission = (options: { readonly connections: number; readonly storeTimeoutMs: number }): PoolAdmission => {
  const { connections, storeTimeoutMs } = options
  let taken = 0
  let holdMs: number | undefined
  // Sets keep insertion order: first come, first served within each.
  const underWay = new Set<Waiter>()
  const notStarted = new Set<Waiter>()
  const first = (): Waiter | undefined => {
    for (const waiter of underWay) return waiter
    for (const waiter of notStarted) return waiter
    return undefined
  }
  const waiting = () => underWay.size + notStarted.size

  /**
   * Wakes the first caller queued when a place is free, on `fiber`'s scheduler rather than in
   * this call: it takes the place when it runs.
   */
  const wakeFirst = (fiber: Fiber.Fiber<unknown, unknown>) => {
    if (taken >= connections) return
    const next = first()
    if (next?.wake === undefined) return
    const wake = next.wake
    next.wake = undefined
    fiber.currentDispatcher.scheduleTask(() => wake(Effect.void), 0)
  }

  const leave = (fiber: Fiber.Fiber<unknown, unknown>, since: number) => {
    taken--
    // Only holds while others wait count: those are what a queue moves at, where a migration's
    // or a lone sweep's long hold on an idle pool is not.
    if (waiting() > 0) holdMs = observedHoldMs(holdMs, performance.now() - since)
    wakeFirst(fiber)
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
        if (waitMs > boundMs) return Effect.fail(busy(waitMs))
      }
      const waiter: Waiter = {
        wake: undefined,
        expired: undefined,
        timer: setTimeout(() => {
          waiter.expired = lane === notStarted && wait !== undefined
            ? busy(boundMs)
            : refused(`The store gave no connection within ${boundMs} ms`, new Error("timeout exceeded when trying to connect"))
          remove()
          const wake = waiter.wake
          waiter.wake = undefined
          wake?.(Effect.fail(waiter.expired))
        }, boundMs)
      }
      const remove = () => {
        clearTimeout(waiter.timer)
        if (lane.delete(waiter)) wakeFirst(fiber)
      }
      lane.add(waiter)
      const turn = restore(Effect.callback<void, SqlError.SqlError>((resume) => {
        if (waiter.expired !== undefined) return resume(Effect.fail(waiter.expired))
        // It may have been woken while it was not suspended yet.
        if (taken < connections && first() === waiter) return resume(Effect.void)
        waiter.wake = resume
        return Effect.sync(() => {
          waiter.wake = undefined
        })
      }))
      const loop: Effect.Effect<A, E | SqlError.SqlError, R> = Effect.flatMap(turn, () => {
        if (taken >= connections || first() !== waiter) return loop
        taken++
        remove()
        if (wait !== undefined) wait.underWay = true
        return admitted(fiber, performance.now())
      })
      return Effect.onExitPrimitive(loop, (exit) => {
        // Interrupted or failed while queued: out of the queue, and the next one looks.
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
