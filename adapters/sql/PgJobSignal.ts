import { PgClient } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Layer, Ref, Stream, type Redacted } from "effect"
import { JobSignal } from "../../src/ports/JobSignal.js"

const CHANNEL = "genjobs_jobs"

/**
 * Wakes workers in every process through LISTEN/NOTIFY. It holds its own connection for
 * LISTEN. Notifications are hints; workers still poll.
 */
export const makePgJobSignal = Effect.gen(function*() {
  const pg = yield* PgClient.PgClient
  const current = yield* Ref.make(yield* Deferred.make<void>())
  const wake = Effect.gen(function*() {
    const previous = yield* Ref.getAndSet(current, yield* Deferred.make<void>())
    yield* Deferred.succeed(previous, undefined)
  })
  yield* pg.listen(CHANNEL).pipe(
    Stream.runForEach(() => wake),
    Effect.catchAll((error) => Effect.logWarning("job notifications stopped; workers fall back to polling", error)),
    Effect.forkScoped
  )
  return JobSignal.of({
    // PgClient.notify sends `NOTIFY channel, $1`, which PostgreSQL refuses (no parameters in
    // NOTIFY); pg_notify() takes them. PgClient.listen drops empty payloads, hence "job".
    notify: pg`SELECT pg_notify(${CHANNEL}, 'job')`.pipe(
      Effect.asVoid,
      Effect.catchAll((error) => Effect.logWarning("could not notify workers; they will poll", error))
    ),
    wait: (maxMs) =>
      Ref.get(current).pipe(
        Effect.flatMap((d) => Deferred.await(d)),
        Effect.timeoutTo({ duration: Duration.millis(maxMs), onTimeout: () => undefined, onSuccess: () => undefined })
      )
  })
})

export const layerPgJobSignal = (options: { readonly url: Redacted.Redacted<string> }) =>
  Layer.scoped(JobSignal, makePgJobSignal).pipe(Layer.provide(PgClient.layer({ url: options.url })))
