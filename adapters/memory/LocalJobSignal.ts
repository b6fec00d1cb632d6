import { Deferred, Duration, Effect, Layer, Ref } from "effect"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { WebhookSignal } from "../../src/ports/WebhookSignal.js"

/** In-process wake-ups: every waiter shares one Deferred, replaced on each notify. */
export const makeLocalSignal = Effect.gen(function*() {
  const current = yield* Ref.make(yield* Deferred.make<void>())
  const notify = Effect.gen(function*() {
    const next = yield* Deferred.make<void>()
    const previous = yield* Ref.getAndSet(current, next)
    yield* Deferred.succeed(previous, undefined)
  })
  const wait = (maxMs: number) =>
    Ref.get(current).pipe(
      Effect.flatMap((d) => Deferred.await(d).pipe(Effect.timeoutTo({ duration: Duration.millis(maxMs), onTimeout: () => undefined, onSuccess: () => undefined })))
    )
  return { notify, wait }
})

export const makeLocalJobSignal = Effect.map(makeLocalSignal, JobSignal.of)

export const layerLocalJobSignal = Layer.effect(JobSignal, makeLocalJobSignal)

export const layerLocalWebhookSignal = Layer.effect(WebhookSignal, Effect.map(makeLocalSignal, WebhookSignal.of))

/** Both signals a store provides, in-process: for stores that one process uses alone. */
export const layerLocalSignals = Layer.merge(layerLocalJobSignal, layerLocalWebhookSignal)
