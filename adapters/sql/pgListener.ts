import { PgClient } from "@effect/sql-pg"
import { Context, Deferred, Duration, Effect, Exit, Layer, Redacted, Schedule, type Scope } from "effect"
import pg from "pg"

/** One user of the process's LISTEN connection: its channels and what it does on each event. */
export interface PgChannels {
  readonly channels: ReadonlyArray<string>
  /** For each notification on one of `channels`. */
  readonly onNotification: (channel: string, payload: string) => Effect.Effect<void>
  /** Once its LISTEN holds (`reconnected` after a drop): whatever was notified before was not heard. */
  readonly onConnected: (reconnected: boolean) => Effect.Effect<void>
  /** When the connection ends; it reconnects, and `onConnected(true)` follows. */
  readonly onDropped: Effect.Effect<void>
}

/** Reconnects after 0.1, 0.2, 0.4 ... seconds, never waiting more than this. */
const MAX_RECONNECT_DELAY = Duration.seconds(5)

/** The application name of the connection (pg_stat_activity), which operators and the fault tests look for. */
export const LISTENER_APPLICATION_NAME = "genjobs listener"

/**
 * The process's one LISTEN connection to PostgreSQL, held outside the pool (PgClient.listen
 * cannot tell when its connection dies: it then stays silent), shared by every user of
 * notifications (the job and webhook signals, the stores' change hints): one connection for
 * all their channels, not one each. A user added while it is up is LISTENed at once; when it
 * drops, every user hears `onDropped`, it reconnects with capped backoff, LISTENs every user's
 * channels again and each hears `onConnected(true)`.
 */
export class PgListener extends Context.Tag("genjobs/PgListener")<PgListener, {
  /** Listens on `users.channels` until the scope closes. */
  readonly add: (users: PgChannels) => Effect.Effect<void, never, Scope.Scope>
}>() {}

const settingsOf = (config: PgClient.PgClientConfig): pg.ClientConfig => ({
  ...(config.url === undefined ? {} : { connectionString: Redacted.value(config.url) }),
  ...(config.host === undefined ? {} : { host: config.host }),
  ...(config.port === undefined ? {} : { port: config.port }),
  ...(config.database === undefined ? {} : { database: config.database }),
  ...(config.username === undefined ? {} : { user: config.username }),
  ...(config.password === undefined ? {} : { password: Redacted.value(config.password) }),
  ...(config.ssl === undefined ? {} : { ssl: config.ssl }),
  application_name: LISTENER_APPLICATION_NAME
})

const listenOn = (connection: pg.Client, channels: ReadonlyArray<string>) =>
  Effect.tryPromise(async () => {
    for (const channel of channels) await connection.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
  })

/** The shared connection over the PgClient in context's settings; runs on a fiber of the layer's scope. */
export const makePgListener = Effect.gen(function*() {
  const settings = settingsOf((yield* PgClient.PgClient).config)
  const reconnectDelays = Schedule.exponential(Duration.millis(100)).pipe(Schedule.union(Schedule.spaced(MAX_RECONNECT_DELAY)))
  const users = new Set<PgChannels>()
  /** The users whose channels the current connection LISTENs, and the connection once every user's are. */
  let listening = new Set<PgChannels>()
  let current: pg.Client | undefined
  /** Users that heard `onConnected` once: for them a later connection is a reconnection. */
  const connectedBefore = new WeakSet<PgChannels>()

  const connected = (user: PgChannels) =>
    Effect.suspend(() => {
      const reconnected = connectedBefore.has(user)
      connectedBefore.add(user)
      return user.onConnected(reconnected)
    })

  const connect = Effect.acquireRelease(
    Effect.tryPromise(async () => {
      const connection = new pg.Client(settings)
      // A dropped connection is handled through "end" below; an unhandled "error" would crash the process.
      connection.on("error", () => undefined)
      try {
        await connection.connect()
        return connection
      } catch (error) {
        void connection.end().catch(() => undefined)
        throw error
      }
    }),
    (connection) => Effect.promise(() => connection.end().catch(() => undefined))
  )

  /** LISTENs every user's channels on `connection`, those added meanwhile included, then tells each. */
  const listenAll = (connection: pg.Client) =>
    Effect.gen(function*() {
      listening = new Set()
      for (;;) {
        const left = [...users].filter((user) => !listening.has(user))
        if (left.length === 0) break
        for (const user of left) {
          yield* listenOn(connection, user.channels)
          listening.add(user)
        }
      }
      current = connection
      // A snapshot: a user added meanwhile is LISTENed and told by `add` itself.
      yield* Effect.forEach([...listening], connected, { discard: true })
    })

  /** A failed connect or LISTEN leaves nothing current: the next attempt starts over. */
  const forget = Effect.sync(() => {
    current = undefined
    listening = new Set()
  })

  /** One connection, from its connect to its end; fails if it could not LISTEN (then retried). */
  const session = Effect.scoped(Effect.gen(function*() {
    const connection = yield* connect
    const ended = yield* Deferred.make<void>()
    connection.on("notification", (message) => {
      for (const user of listening) {
        if (user.channels.includes(message.channel)) Effect.runSync(user.onNotification(message.channel, message.payload ?? ""))
      }
    })
    connection.on("end", () => Deferred.unsafeDone(ended, Exit.void))
    yield* Effect.onError(listenAll(connection), () => forget)
    yield* Deferred.await(ended)
    const dropped = listening
    yield* forget
    yield* Effect.forEach(dropped, (user) => user.onDropped, { discard: true })
  }))

  // After a drop it reconnects at once, then after 0.1, 0.2, 0.4 ... s while that fails.
  yield* Effect.forkScoped(Effect.forever(Effect.retry(session, reconnectDelays)))

  const add = (user: PgChannels): Effect.Effect<void, never, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.suspend(() => {
        users.add(user)
        const connection = current
        // Not up yet (or reconnecting): the session LISTENs it with the others.
        if (connection === undefined) return Effect.void
        return listenOn(connection, user.channels).pipe(
          Effect.zipRight(Effect.suspend(() => {
            // The connection may have dropped meanwhile: the next one LISTENs it and tells it.
            if (current !== connection) return Effect.void
            listening.add(user)
            return connected(user)
          })),
          // A LISTEN that failed means the connection is going: the next one takes the user.
          Effect.ignore
        )
      }),
      () =>
        Effect.sync(() => {
          users.delete(user)
          listening.delete(user)
        })
    )
  return { add } as const
})

/** The shared LISTEN connection over the PgClient in context's settings. */
export const layerPgListener = Layer.scoped(PgListener, makePgListener)
