import { Deferred, Duration, Effect, Layer, Ref } from "effect"
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

/**
 * In-process wake-ups that wake one waiter per notify, oldest first: one queued job needs one
 * claimer, not all of them. A notify with nobody waiting is kept (one at most) for the next
 * wait, so a job queued while its claimer was busy claiming is not left to the poll.
 */
export const makeWakeOne = Effect.sync(() => {
  const waiters: Array<Deferred.Deferred<void>> = []
  let kept = false
  const notify = Effect.suspend(() => {
    const waiter = waiters.shift()
    if (waiter !== undefined) return Deferred.succeed(waiter, undefined).pipe(Effect.asVoid)
    kept = true
    return Effect.void
  })
  const wait = (maxMs: number) =>
    Effect.suspend(() => {
      if (kept) {
        kept = false
        return Effect.void
      }
      return Effect.flatMap(Deferred.make<void>(), (waiter) => {
        waiters.push(waiter)
        return waitAtMost(maxMs)(Deferred.await(waiter)).pipe(
          Effect.ensuring(Effect.sync(() => {
            const at = waiters.indexOf(waiter)
            if (at >= 0) waiters.splice(at, 1)
          }))
        )
      })
    })
  return { notify, wait }
})

export const makeLocalJobSignal = Effect.map(makeWakeOne, JobSignal.of)

export const layerLocalJobSignal = Layer.effect(JobSignal, makeLocalJobSignal)

export const layerLocalWebhookSignal = Layer.effect(WebhookSignal, Effect.map(makeLocalSignal, WebhookSignal.of))

/** The signals and job hints a store provides, in-process: for stores that one process uses alone. */
export const layerLocalSignals = Layer.mergeAll(layerLocalJobSignal, layerLocalWebhookSignal, layerLocalJobEvents)
