import { Cause, Clock, Deferred, Duration, Effect, Exit, Fiber, FiberSet, Option, Queue, type Scope, Semaphore } from "effect"
import { randomBytes } from "node:crypto"
import type { WebhookDelivery } from "../../domain/webhook.js"
import { attempt } from "./attempt.js"
import type { DispatchDeps } from "./deps.js"

/**
 * Up to `concurrency` attempts in flight in the current scope: one claimer leases due
 * deliveries (fairly across accounts, see claimDue), in one claim for every slot free, and runs
 * each in its own fiber. Idle, it sleeps until the next attempt falls due, a signal, a finished
 * attempt (which may free an account at its cap) or the poll interval, whichever is first.
 * Closing the scope stops claiming and lets attempts in flight finish (each is bounded by the
 * deadline).
 */
export const start = (deps: DispatchDeps) => (concurrency: number): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { claim, config, deliveries, leaseMs, signal } = deps
    const stopping = yield* Deferred.make<void>()
    const slots = yield* Semaphore.make(concurrency)
    const finished = yield* Queue.sliding<void>(1)
    const inFlight = yield* FiberSet.make()
    const workerId = `whd_${randomBytes(6).toString("hex")}`
    const poll = config.pollIntervalMs

    const idle = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const next = yield* deliveries.nextAttemptAfter(now).pipe(Effect.orElseSucceed(() => Option.none<number>()))
      const ms = Option.match(next, { onNone: () => poll, onSome: (at) => Math.min(poll, at - now) })
      yield* Effect.raceAll([signal.wait(ms), Queue.take(finished), Deferred.await(stopping)])
    })

    const run = (delivery: WebhookDelivery) =>
      attempt(deps, delivery).pipe(
        Effect.catchCause((cause) =>
          Effect.logError("webhook attempt could not be recorded", { deliveryId: delivery.id }, Cause.pretty(cause))
        ),
        Effect.ensuring(slots.release(1).pipe(Effect.andThen(Queue.offer(finished, undefined))))
      )

    /**
     * Takes a slot, and every other free one, and claims into them in one claim; waits when the
     * claim found fewer due than it asked for; false once stopping.
     */
    const claimOnce = Effect.gen(function*() {
      yield* slots.take(1)
      if (yield* Deferred.isDone(stopping)) {
        yield* slots.release(1)
        return false
      }
      let free = 1
      while (free < concurrency && (yield* slots.takeIfAvailable(1))) free++
      // This claim looks at everything finished so far; only later finishes should wake the loop.
      yield* Queue.clear(finished)
      const exit = yield* Effect.exit(claim(workerId, free))
      if (Exit.isFailure(exit)) {
        yield* slots.release(free)
        yield* Effect.logError("webhook dispatcher could not reach the store", Cause.pretty(exit.cause))
        yield* Effect.sleep(Duration.millis(poll)).pipe(Effect.raceFirst(Deferred.await(stopping)))
        return true
      }
      for (const delivery of exit.value) yield* FiberSet.run(inFlight, run(delivery))
      if (exit.value.length < free) {
        yield* slots.release(free - exit.value.length)
        yield* idle
      }
      return true
    })

    const fiber = yield* Effect.forkScoped(Effect.repeat(claimOnce, { while: (goOn) => goOn }))
    yield* Effect.addFinalizer(() =>
      Deferred.succeed(stopping, undefined).pipe(
        Effect.andThen(Fiber.await(fiber)),
        // Every slot back means every attempt in flight has been recorded.
        Effect.andThen(slots.take(concurrency)),
        Effect.timeout(Duration.millis(leaseMs)),
        Effect.ignore
      )
    )
  })
