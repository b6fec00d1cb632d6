import type { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Redacted, Schedule, type Scope } from "effect"
import pg from "pg"

/**
 * A LISTEN connection held outside the pool, as PgClient.listen cannot tell when its connection
 * dies (it then stays silent): `onConnected` once LISTEN holds (`reconnected` after a drop),
 * `onNotification` for each notification, `onDropped` when the connection ends; then it
 * reconnects after 0.1, 0.2, 0.4 ... seconds, never waiting more than `maxDelay`. Runs on a
 * fiber of the caller's scope for as long as it lasts.
 */
export const runPgListener = (options: {
  readonly config: PgClient.PgClientConfig
  readonly applicationName: string
  readonly channels: ReadonlyArray<string>
  readonly maxDelay: Duration.DurationInput
  readonly onNotification: (channel: string, payload: string) => Effect.Effect<void>
  readonly onConnected: (reconnected: boolean) => Effect.Effect<void>
  readonly onDropped: Effect.Effect<void>
}): Effect.Effect<void, never, Scope.Scope> => {
  const { config } = options
  const reconnectDelays = Schedule.exponential(Duration.millis(100)).pipe(Schedule.union(Schedule.spaced(options.maxDelay)))
  const settings: pg.ClientConfig = {
    ...(config.url === undefined ? {} : { connectionString: Redacted.value(config.url) }),
    ...(config.host === undefined ? {} : { host: config.host }),
    ...(config.port === undefined ? {} : { port: config.port }),
    ...(config.database === undefined ? {} : { database: config.database }),
    ...(config.username === undefined ? {} : { user: config.username }),
    ...(config.password === undefined ? {} : { password: Redacted.value(config.password) }),
    ...(config.ssl === undefined ? {} : { ssl: config.ssl }),
    application_name: options.applicationName
  }

  const connect = Effect.acquireRelease(
    Effect.tryPromise(async () => {
      const connection = new pg.Client(settings)
      // A dropped connection is handled through "end" below; an unhandled "error" would crash the process.
      connection.on("error", () => undefined)
      try {
        await connection.connect()
        for (const channel of options.channels) await connection.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
        return connection
      } catch (error) {
        void connection.end().catch(() => undefined)
        throw error
      }
    }),
    (connection) => Effect.promise(() => connection.end().catch(() => undefined))
  )

  /** Listens until the connection ends. */
  const listen = (connection: pg.Client) =>
    Effect.async<void>((resume) => {
      connection.on("notification", (message) => Effect.runSync(options.onNotification(message.channel, message.payload ?? "")))
      connection.on("end", () => resume(Effect.void))
    })

  const session = (reconnected: boolean) =>
    Effect.scoped(Effect.gen(function*() {
      const connection = yield* connect.pipe(Effect.retry(reconnectDelays))
      yield* options.onConnected(reconnected)
      yield* listen(connection)
      yield* options.onDropped
    }))

  return session(false).pipe(Effect.zipRight(Effect.forever(session(true))), Effect.forkScoped, Effect.asVoid)
}
