/**
 * @effect/sql's SqlClient over Node's own SQLite (`node:sqlite`, Node >= 22.16): nothing to compile
 * at install. Modeled on Effect 4's `@effect/sql-sqlite-node` (effect-smol
 * packages/sql/sqlite-node/src/SqliteClient.ts, which is on `node:sqlite` too) in Effect 3's
 * terms, so moving to Effect 4 replaces this file with that package's `SqliteClient.layer`.
 * Differences, each for a reason given where it is: the pragmas better-sqlite3 (the driver before)
 * was built with (synchronous NORMAL in WAL mode, a 16 MB cache), a busy timeout, a statement's
 * reader flag kept with it in the cache, and none of export/backup/loadExtension (unused here).
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as Client from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Cache, Context, Duration, Effect, identity, Layer, Scope } from "effect"
import { DatabaseSync, type StatementSync } from "node:sqlite"

const ATTR_DB_SYSTEM_NAME = "db.system.name"

export interface SqliteClient extends Client.SqlClient {
  readonly config: SqliteClientConfig
  /** Not supported in sqlite */
  readonly updateValues: never
}

export const SqliteClient = Context.GenericTag<SqliteClient>("genjobs/SqliteClient")

export interface SqliteClientConfig {
  readonly filename: string
  readonly readonly?: boolean | undefined
  readonly prepareCacheSize?: number | undefined
  readonly prepareCacheTTL?: Duration.DurationInput | undefined
  readonly disableWAL?: boolean | undefined
  /**
   * How long a statement waits for another connection's lock (the CLI or a host's own client on
   * the same file) before failing with SQLITE_BUSY. node:sqlite's default is 0; 5 s is what
   * better-sqlite3, the driver before this one, waited.
   */
  readonly busyTimeout?: Duration.DurationInput | undefined
  readonly spanAttributes?: Record<string, unknown> | undefined
  readonly transformResultNames?: ((str: string) => string) | undefined
  readonly transformQueryNames?: ((str: string) => string) | undefined
}

/**
 * A prepared statement and whether it answers rows: `columns()` builds an array of objects on
 * each call, so it is asked once per statement rather than on every run as upstream does.
 */
interface Prepared {
  readonly statement: StatementSync
  readonly reader: boolean
}

const prepare = (db: DatabaseSync, sql: string): Prepared => {
  const statement = db.prepare(sql)
  return { statement, reader: statement.columns().length > 0 }
}

const runPrepared = (
  { reader, statement }: Prepared,
  params: ReadonlyArray<unknown>,
  raw: boolean
) =>
  Effect.withFiberRuntime<ReadonlyArray<any>, SqlError>((fiber) => {
    // Integers beyond 2^53 come back as BigInt only where asked (`SqlClient.SafeIntegers`);
    // otherwise node:sqlite refuses to read them (ERR_OUT_OF_RANGE) rather than round them.
    statement.setReadBigInts(Context.get(fiber.currentContext, Client.SafeIntegers))
    try {
      const args = params as Array<any>
      if (reader) return Effect.succeed(statement.all(...args))
      const result = statement.run(...args)
      return Effect.succeed(raw ? result as unknown as ReadonlyArray<any> : [])
    } catch (cause) {
      return Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
    }
  })

export const make = (
  options: SqliteClientConfig
): Effect.Effect<SqliteClient, never, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const compiler = Statement.makeCompilerSqlite(options.transformQueryNames)
    const transformRows = options.transformResultNames
      ? Statement.defaultTransforms(options.transformResultNames).array
      : undefined

    const makeConnection = Effect.gen(function*() {
      const scope = yield* Effect.scope
      const db = new DatabaseSync(options.filename, {
        readOnly: options.readonly ?? false,
        timeout: Duration.toMillis(options.busyTimeout ?? Duration.seconds(5))
      })
      yield* Scope.addFinalizer(scope, Effect.sync(() => db.close()))

      if (options.disableWAL !== true) {
        // NORMAL: a commit waits for no fsync, the WAL is synced at checkpoints; a power cut can
        // lose the last commits, never corrupt the file. What the engine ran with before
        // (better-sqlite3 is built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1); node:sqlite's FULL
        // fsyncs every commit, about 1.5 to 3 ms of wall time per write on this machine's disk.
        db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
      }
      // 16 MB of page cache per connection, better-sqlite3's built-in default (SQLite's is 2 MB).
      db.exec("PRAGMA cache_size = -16000")

      const prepareCache = yield* Cache.make({
        capacity: options.prepareCacheSize ?? 200,
        timeToLive: options.prepareCacheTTL ?? Duration.minutes(10),
        lookup: (sql: string) =>
          Effect.try({
            try: () => prepare(db, sql),
            catch: (cause) => new SqlError({ cause, message: "Failed to prepare statement " })
          })
      })

      const run = (sql: string, params: ReadonlyArray<unknown>, raw = false) =>
        Effect.flatMap(prepareCache.get(sql), (prepared) => runPrepared(prepared, params, raw))

      const runValues = (sql: string, params: ReadonlyArray<unknown>) =>
        Effect.acquireUseRelease(
          prepareCache.get(sql),
          (prepared) => {
            prepared.statement.setReturnArrays(true)
            return runPrepared(prepared, params, false) as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, SqlError>
          },
          (prepared) => Effect.sync(() => prepared.statement.setReturnArrays(false))
        )

      return identity<Connection>({
        execute(sql, params, transformRows) {
          return transformRows ? Effect.map(run(sql, params), transformRows) : run(sql, params)
        },
        executeRaw(sql, params) {
          return run(sql, params, true)
        },
        executeValues(sql, params) {
          return runValues(sql, params)
        },
        executeUnprepared(sql, params, transformRows) {
          const effect = Effect.flatMap(
            Effect.try({
              try: () => prepare(db, sql),
              catch: (cause) => new SqlError({ cause, message: "Failed to prepare statement " })
            }),
            (prepared) => runPrepared(prepared, params ?? [], false)
          )
          return transformRows ? Effect.map(effect, transformRows) : effect
        },
        executeStream(_sql, _params) {
          return Effect.dieMessage("executeStream not implemented")
        }
      })
    })

    // One connection, one statement at a time; a transaction holds the permit until it ends.
    const semaphore = yield* Effect.makeSemaphore(1)
    const connection = yield* makeConnection

    const acquirer = semaphore.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, semaphore.release(1)))
        ),
        connection
      )
    )

    return Object.assign(
      (yield* Client.make({
        acquirer,
        compiler,
        transactionAcquirer,
        spanAttributes: [
          ...(options.spanAttributes ? Object.entries(options.spanAttributes) : []),
          [ATTR_DB_SYSTEM_NAME, "sqlite"]
        ],
        transformRows
      })) as SqliteClient,
      { config: options }
    )
  })

/** The client as both `SqliteClient` and `SqlClient`, closed with the layer's scope. */
export const layer = (config: SqliteClientConfig): Layer.Layer<SqliteClient | Client.SqlClient> =>
  Layer.scopedContext(
    Effect.map(make(config), (client) => Context.make(SqliteClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
