import { PgClient } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Layer, Ref, Stream, type Redacted } from "effect"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "./tables.js"

/**
 * Wakes workers in every process through LISTEN/NOTIFY. It holds its own connection for
 * LISTEN. Notifications are hints; workers still poll. The channel carries the stores' table
 * prefix, so engines with different prefixes in one database do not wake each other.
 */
export const makePgJobSignal = (tablePrefix: string = DEFAULT_TABLE_PREFIX) => Effect.gen(function*() {
  const channel = `${yield* checkTablePrefix(tablePrefix)}jobs`
  const pg = yield* PgClient.PgClient
  const current = yield* Ref.make(yield* Deferred.make<void>())
  const wake = Effect.gen(function*() {
    const previous = yield* Ref.getAndSet(current, yield* Deferred.make<void>())
    yield* Deferred.succeed(previous, undefined)
  })
  yield* pg.listen(channel).pipe(
    Stream.runForEach(() => wake),
    Effect.catchAll((error) => Effect.logWarning("job notifications stopped; workers fall back to polling", error)),
    Effect.forkScoped
  )
  return JobSignal.of({
    // PgClient.notify sends `NOTIFY channel, $1`, which PostgreSQL refuses (no parameters in
    // NOTIFY); pg_notify() takes them. PgClient.listen drops empty payloads, hence "job".
    notify: pg`SELECT pg_notify(${channel}, 'job')`.pipe(
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

export const layerPgJobSignal = (options: { readonly url: Redacted.Redacted<string>; readonly tablePrefix?: string | undefined }) =>
  Layer.scoped(JobSignal, makePgJobSignal(options.tablePrefix)).pipe(Layer.provide(PgClient.layer({ url: options.url })))
