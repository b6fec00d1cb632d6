import { Clock, Deferred, Duration, Effect, Layer, Ref } from "effect"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { WebhookSignal } from "../../src/ports/WebhookSignal.js"
import { layerLocalJobEvents } from "./LocalJobEvents.js"

const waitAtMost = (maxMs: number) => <A, E>(effect: Effect.Effect<A, E>) =>
  effect.pipe(Effect.asVoid, Effect.timeoutOrElse({ duration: Duration.millis(maxMs), orElse: () => Effect.void }))

/** In-process wake-ups: every waiter shares one Deferred, replaced on each notify. */
export const makeLocalSignal = Effect.gen(function*() {
  const current = yield* Ref.make(yield* Deferred.make<void>())
  const notify = Effect.gen(function*() {
    const next = yield* Deferred.make<void>()
    const previous = yield* Ref.getAndSet(current, next)
    yield* Deferred.succeed(previous, undefined)
  })
  const wait = (maxMs: number) => Ref.get(current).pipe(Effect.flatMap((d) => waitAtMost(maxMs)(Deferred.await(d))))
  return { notify, wait }
})

/** A claimer waiting for a notify: resumed by one, or by the timer once `until` (on the Clock) has come. */
interface Waiter {
  readonly wake: () => void
  readonly until: number
}

/**
 * In-process wake-ups that wake one waiter per notify, oldest first: one queued job needs one
 * claimer, not all of them. A notify with nobody waiting is kept (one at most) for the next
 * wait, so a job queued while its claimer was busy claiming is not left to the poll.
 *
 * A wait is a callback, not fibers: its `maxMs` is kept by one timer fiber of the scope, which
 * sleeps on the Clock (so TestClock drives it) until the earliest waiter's end and resumes those
 * due. A wait raced against its own sleep forked two fibers per wait, and a notify reached its
 * claimer through the race's winner: 0.15 ms after the notify where a callback takes 0.04
 * (docs/decisions.md, "A claimer's wait without a race"). The timer wakes about once per `maxMs`,
 * not once per wait: a waiter woken by a notify leaves the list, and the timer, when it wakes for
 * it, finds nothing due and sleeps until the next one's end. Only a waiter whose end is before the
 * timer's next wake-up (a shorter `maxMs`) re-plans it.
 */
export const makeWakeOne = Effect.gen(function*() {
  const clock = yield* Clock.Clock
  const waiters: Array<Waiter> = []
  let kept = false
  /** When the timer fiber wakes next (Infinity: it waits for a waiter). */
  let timerAt = Infinity
  /**
   * Wakes the timer fiber to plan again: a waiter ends before `timerAt`. Set whenever the timer
   * waits (a race starts its branches at once, so no waiter comes between its plan and this).
   */
  let replan: (() => void) | undefined
  const remove = (waiter: Waiter) => {
    const at = waiters.indexOf(waiter)
    if (at >= 0) waiters.splice(at, 1)
  }
  const notify = Effect.sync(() => {
    const waiter = waiters.shift()
    if (waiter === undefined) kept = true
    else waiter.wake()
  })
  const wait = (maxMs: number) =>
    Effect.suspend(() => {
      if (kept) {
        kept = false
        return Effect.void
      }
      return Effect.callback<void>((resume) => {
        const waiter: Waiter = { wake: () => resume(Effect.void), until: clock.currentTimeMillisUnsafe() + maxMs }
        waiters.push(waiter)
        if (waiter.until < timerAt) replan?.()
        return Effect.sync(() => remove(waiter))
      })
    })
  const replanned = Effect.callback<void>((resume) => {
    replan = () => {
      replan = undefined
      resume(Effect.void)
    }
    return Effect.sync(() => (replan = undefined))
  })
  const timer = Effect.suspend(() => {
    const now = clock.currentTimeMillisUnsafe()
    for (const due of waiters.filter((waiter) => waiter.until <= now)) {
      remove(due)
      due.wake()
    }
    timerAt = waiters.reduce((earliest, waiter) => Math.min(earliest, waiter.until), Infinity)
    return timerAt === Infinity ? replanned : Effect.raceFirst(clock.sleep(Duration.millis(timerAt - now)), replanned)
  })
  yield* Effect.forkScoped(Effect.forever(timer))
  return { notify, wait }
})

export const makeLocalJobSignal = Effect.map(makeWakeOne, JobSignal.of)

export const layerLocalJobSignal = Layer.effect(JobSignal, makeLocalJobSignal)

export const layerLocalWebhookSignal = Layer.effect(WebhookSignal, Effect.map(makeLocalSignal, WebhookSignal.of))

/** The signals and job hints a store provides, in-process: for stores that one process uses alone. */
export const layerLocalSignals = Layer.mergeAll(layerLocalJobSignal, layerLocalWebhookSignal, layerLocalJobEvents)
