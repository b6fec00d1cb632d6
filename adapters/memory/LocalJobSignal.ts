import { Deferred, Duration, Effect, Layer, Ref } from "effect"
import { JobSignal } from "../../src/ports/JobSignal.js"

/** In-process wake-ups: every waiter shares one Deferred, replaced on each notify. */
export const makeLocalJobSignal = Effect.gen(function*() {
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
  return JobSignal.of({ notify, wait })
})

export const layerLocalJobSignal = Layer.effect(JobSignal, makeLocalJobSignal)
