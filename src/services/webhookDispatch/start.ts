import { Cause, Clock, Deferred, Duration, Effect, Exit, Fiber, FiberSet, Option, Queue, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { WebhookDelivery } from "../../domain/webhook.js"
import { attempt } from "./attempt.js"
import type { DispatchDeps } from "./deps.js"

/** The longest a claim waits for the attempts on their way (see `hold`). */
export const HOLD_MAX_MS = 20

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
    const finished = yield* Queue.sliding<void>(1)
    const inFlight = yield* FiberSet.make()
    const workerId = `whd_${randomBytes(6).toString("hex")}`
    const poll = config.pollIntervalMs
    /** Attempts claimed and not yet recorded: a slot is free while fewer than `concurrency`. */
    let running = 0
    /** How long the last claim took, and whether it found a delivery for every slot it asked for. */
    let lastClaimMs = 0
    let lastClaimFull = false
    /** Set as the scope closes: no claim starts after it, and no wait for a slot or a hold outlasts it. */
    let stopped = false

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
        Effect.ensuring(Effect.suspend(() => {
          running--
          return Queue.offer(finished, undefined)
        }))
      )

    /** Returns once `done` holds, looking again after each finished attempt (and at the close, which offers one too). */
    const until = (done: () => boolean): Effect.Effect<void> =>
      Effect.suspend(() => (done() ? Effect.void : Effect.andThen(Queue.take(finished), until(done))))

    /**
     * While the claims keep finding a delivery for every slot (a backlog) and attempts are on
     * their way, a claim first waits for those to finish, as long as the last claim took
     * (HOLD_MAX_MS at most). A claim costs about the same at any size (on PostgreSQL, its round
     * trips under the claims' lock), and a slot freed just after it began waits for the next
     * claim anyway: claiming at the first free slot, each claim found one or two slots free and
     * the next the rest, so a drain paid two claims for each round of slots (docs/decisions.md,
     * "Webhook claims wait for the attempts on their way").
     */
    const hold = Effect.suspend(() =>
      !lastClaimFull || running === 0 || lastClaimMs <= 0
        ? Effect.void
        : until(() => running === 0 || stopped).pipe(Effect.timeoutOption(Duration.millis(Math.min(lastClaimMs, HOLD_MAX_MS))), Effect.asVoid)
    )

    /** Claims into every free slot, once one is; waits when the claim found fewer due than it asked for; false once stopping. */
    const claimOnce = Effect.gen(function*() {
      yield* until(() => running < concurrency || stopped)
      if (stopped) return false
      yield* hold
      if (stopped) return false
      const free = concurrency - running
      running += free
      // This claim looks at everything finished so far; only later finishes should wake the loop.
      yield* Queue.clear(finished)
      const started = yield* Clock.currentTimeMillis
      const exit = yield* Effect.exit(claim(workerId, free))
      lastClaimMs = (yield* Clock.currentTimeMillis) - started
      lastClaimFull = Exit.isSuccess(exit) && exit.value.length === free
      if (Exit.isFailure(exit)) {
        running -= free
        yield* Effect.logError("webhook dispatcher could not reach the store", Cause.pretty(exit.cause))
        yield* Effect.sleep(Duration.millis(poll)).pipe(Effect.raceFirst(Deferred.await(stopping)))
        return true
      }
      for (const delivery of exit.value) yield* FiberSet.run(inFlight, run(delivery))
      if (exit.value.length < free) {
        running -= free - exit.value.length
        yield* idle
      }
      return true
    })

    const fiber = yield* Effect.forkScoped(Effect.repeat(claimOnce, { while: (goOn) => goOn }))
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => (stopped = true)).pipe(
        Effect.andThen(Deferred.succeed(stopping, undefined)),
        // Wakes the claimer where it waits for a slot or holds.
        Effect.andThen(Queue.offer(finished, undefined)),
        Effect.andThen(Fiber.await(fiber)),
        // No attempt left running means every attempt in flight has been recorded.
        Effect.andThen(until(() => running === 0)),
        Effect.timeout(Duration.millis(leaseMs)),
        Effect.ignore
      )
    )
  })
