import { PgClient } from "@effect/sql-pg"
import { Deferred, Duration, Effect, Layer, Ref, Stream, type Redacted } from "effect"
import { JobSignal } from "../../src/ports/JobSignal.js"
import { WebhookSignal } from "../../src/ports/WebhookSignal.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "./tables.js"

/**
 * Wakes waiters in every process through LISTEN/NOTIFY on `<prefix><topic>`. It holds its own
 * connection for LISTEN. Notifications are hints; waiters still poll. The channel carries the
 * stores' table prefix, so engines with different prefixes in one database do not wake each other.
 */
const makePgSignal = (tablePrefix: string, topic: "jobs" | "webhooks") => Effect.gen(function*() {
  const channel = `${yield* checkTablePrefix(tablePrefix)}${topic}`
  const pg = yield* PgClient.PgClient
  const current = yield* Ref.make(yield* Deferred.make<void>())
  const wake = Effect.gen(function*() {
    const previous = yield* Ref.getAndSet(current, yield* Deferred.make<void>())
    yield* Deferred.succeed(previous, undefined)
  })
  yield* pg.listen(channel).pipe(
    Stream.runForEach(() => wake),
    Effect.catchAll((error) => Effect.logWarning(`${topic} notifications stopped; falling back to polling`, error)),
    Effect.forkScoped
  )
  return {
    // PgClient.notify sends `NOTIFY channel, $1`, which PostgreSQL refuses (no parameters in
    // NOTIFY); pg_notify() takes them. PgClient.listen drops empty payloads, hence the topic.
    notify: pg`SELECT pg_notify(${channel}, ${topic})`.pipe(
      Effect.asVoid,
      Effect.catchAll((error) => Effect.logWarning(`could not notify ${topic} waiters; they will poll`, error))
    ),
    wait: (maxMs: number) =>
      Ref.get(current).pipe(
        Effect.flatMap((d) => Deferred.await(d)),
        Effect.timeoutTo({ duration: Duration.millis(maxMs), onTimeout: () => undefined, onSuccess: () => undefined })
      )
  }
})

export const makePgJobSignal = (tablePrefix: string = DEFAULT_TABLE_PREFIX) =>
  Effect.map(makePgSignal(tablePrefix, "jobs"), JobSignal.of)

/** Wakes webhook dispatchers in every process, on `<prefix>webhooks`. */
export const makePgWebhookSignal = (tablePrefix: string = DEFAULT_TABLE_PREFIX) =>
  Effect.map(makePgSignal(tablePrefix, "webhooks"), WebhookSignal.of)

interface PgSignalOptions {
  readonly url: Redacted.Redacted<string>
  readonly tablePrefix?: string | undefined
}

export const layerPgJobSignal = (options: PgSignalOptions) =>
  Layer.scoped(JobSignal, makePgJobSignal(options.tablePrefix)).pipe(Layer.provide(PgClient.layer({ url: options.url })))

/** Both signals a store provides, over one small pool of their own. */
export const layerPgSignals = (options: PgSignalOptions) =>
  Layer.merge(
    Layer.scoped(JobSignal, makePgJobSignal(options.tablePrefix)),
    Layer.scoped(WebhookSignal, makePgWebhookSignal(options.tablePrefix))
  ).pipe(Layer.provide(PgClient.layer({ url: options.url })))
