import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Redacted, Schedule } from "effect"
import pg from "pg"
import { type ChangeTopic, makeStoreChanges, StoreChanges } from "../../src/ports/StoreChanges.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "./tables.js"

/**
 * A cached key, account or catalog is trusted this long without a change heard: the bound when
 * a notification is lost without the connection dropping (a drop is noticed, see below).
 */
export const PG_CACHE_MAX_AGE_MS = 5_000

/** The channel the store's triggers (migration 0015) notify on: `<prefix>changes`, its payload the topic. */
export const changesChannel = (prefix: string) => `${prefix}changes`

const TOPICS: ReadonlyArray<ChangeTopic> = ["access", "catalog"]

/** Reconnects after 0.1, 0.2, 0.4 ... seconds, never waiting more than 5 between attempts. */
const reconnectDelays = Schedule.exponential(Duration.millis(100)).pipe(Schedule.union(Schedule.spaced(Duration.seconds(5))))

const connectionOf = (config: PgClient.PgClientConfig): pg.ClientConfig => ({
  ...(config.url === undefined ? {} : { connectionString: Redacted.value(config.url) }),
  ...(config.host === undefined ? {} : { host: config.host }),
  ...(config.port === undefined ? {} : { port: config.port }),
  ...(config.database === undefined ? {} : { database: config.database }),
  ...(config.username === undefined ? {} : { user: config.username }),
  ...(config.password === undefined ? {} : { password: Redacted.value(config.password) }),
  ...(config.ssl === undefined ? {} : { ssl: config.ssl }),
  application_name: "genjobs changes"
})

/**
 * Change hints from every process on the database: triggers on keys, accounts and the catalog
 * NOTIFY `<prefix>changes` when they commit, and this process LISTENs on a connection of its own.
 * Until the connection is up, and whenever it drops, every topic counts as changed: nothing is
 * cached across a gap in which a change could have been missed.
 */
export const makePgStoreChanges = (tablePrefix: string = DEFAULT_TABLE_PREFIX) =>
  Effect.gen(function*() {
    const prefix = yield* checkTablePrefix(tablePrefix)
    const client = yield* PgClient.PgClient
    const changes = makeStoreChanges(PG_CACHE_MAX_AGE_MS)
    const channel = changesChannel(prefix)
    const everything = Effect.forEach(TOPICS, changes.changed, { discard: true })

    const connect = Effect.acquireRelease(
      Effect.tryPromise(async () => {
        const connection = new pg.Client(connectionOf(client.config))
        // A dropped connection is handled through "end" below; an unhandled "error" would crash the process.
        connection.on("error", () => undefined)
        try {
          await connection.connect()
          await connection.query(`LISTEN ${pg.escapeIdentifier(channel)}`)
          return connection
        } catch (error) {
          void connection.end().catch(() => undefined)
          throw error
        }
      }),
      (connection) => Effect.promise(() => connection.end().catch(() => undefined))
    )

    const listen = (connection: pg.Client) =>
      Effect.async<void>((resume) => {
        connection.on("notification", (message) => {
          const topic = TOPICS.find((t) => t === message.payload)
          Effect.runSync(topic === undefined ? everything : changes.changed(topic))
        })
        connection.on("end", () => resume(Effect.void))
      })

    const session = (dropped: boolean) =>
      Effect.scoped(Effect.gen(function*() {
        const connection = yield* connect.pipe(Effect.retry(reconnectDelays))
        // Whatever changed before LISTEN took hold was not heard.
        yield* everything
        if (dropped) yield* Effect.logInfo("change notifications restored: LISTEN connection re-subscribed")
        yield* listen(connection)
        yield* everything
        yield* Effect.logWarning("change notifications lost: LISTEN connection dropped; reconnecting, caches re-read meanwhile")
      }))

    yield* session(false).pipe(Effect.zipRight(Effect.forever(session(true))), Effect.forkScoped)
    return changes
  })

/** Change hints over the PgClient in context, on a LISTEN connection of their own. */
export const layerPgStoreChanges = (tablePrefix?: string | undefined) => Layer.scoped(StoreChanges, makePgStoreChanges(tablePrefix))
