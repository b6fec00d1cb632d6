/**
 * Effect SQL's SqlClient over Node's own SQLite (`node:sqlite`, Node >= 22.16): nothing to compile
 * at install. Modeled on Effect 4's `@effect/sql-sqlite-node` (effect-smol
 * packages/sql/sqlite-node/src/SqliteClient.ts, which is on `node:sqlite` too), with its
 * connection shared through `SqlClient.makeSqliteAcquirers`. Differences, each for a reason
 * given where it is: the pragmas better-sqlite3 (the driver before) was built with (synchronous
 * NORMAL in WAL mode, a 16 MB cache), a busy timeout waited out on timers, transactions that take
 * the write lock at BEGIN, a statement's reader flag kept with it in the cache, and none of
 * export/backup/loadExtension (unused here).
 */
import { Context, Duration, Effect, identity, Layer, Schedule, Scope, Semaphore, Stream } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient as Client, type SqlConnection, SqlError as Errors, Statement } from "effect/sql"
import { DatabaseSync, type StatementSync } from "node:sqlite"

const ATTR_DB_SYSTEM_NAME = "db.system.name"

export interface SqliteClient extends Client.SqlClient {
  readonly config: SqliteClientConfig
  /** Not supported in sqlite */
  readonly updateValues: never
}

export const SqliteClient = Context.Service<SqliteClient>("genjobs/SqliteClient")

export interface SqliteClientConfig {
  readonly filename: string
  readonly readonly?: boolean | undefined
  readonly prepareCacheSize?: number | undefined
  readonly disableWAL?: boolean | undefined
  /**
   * How long a statement waits for another connection's lock (another process on the same file:
   * the CLI, a host's own client, a second engine) before failing with SQLITE_BUSY; 5 s is what
   * better-sqlite3, the driver before this one, waited. The wait is on timers (busyRetry), not in
   * SQLite's own busy handler, which sleeps inside the call and so holds the event loop.
   */
  readonly busyTimeout?: Duration.Input | undefined
  readonly spanAttributes?: Record<string, unknown> | undefined
  readonly transformResultNames?: ((str: string) => string) | undefined
  readonly transformQueryNames?: ((str: string) => string) | undefined
}

/**
 * node:sqlite's errors carry SQLite's result code as `errcode`; Effect's classifier reads it as
 * `errno`, so a busy or constraint failure gets its own reason rather than UnknownError.
 */
const sqlError = (cause: unknown, message: string, operation: string) => {
  if (typeof cause === "object" && cause !== null && "errcode" in cause && !("errno" in cause) && typeof cause.errcode === "number") {
    Object.assign(cause, { errno: cause.errcode })
  }
  return new Errors.SqlError({ reason: Errors.classifySqliteError(cause, { message, operation }) })
}

/**
 * A prepared statement and whether it answers rows: `columns()` builds an array of objects on
 * each call, so it is asked once per statement rather than on every run as upstream does.
 * `bigInts` is what `setReadBigInts` was last set to: each node:sqlite call crosses into C++,
 * and almost no run asks for BigInts, so the flag is set only when a run asks otherwise.
 */
interface Prepared {
  readonly statement: StatementSync
  readonly reader: boolean
  bigInts: boolean
}

/**
 * Another connection holds the lock this statement needs (SQLITE_BUSY), and waiting can help:
 * not SQLITE_BUSY_SNAPSHOT (517), a read transaction's snapshot made stale by another
 * connection's commit, which no wait mends (BEGIN IMMEDIATE keeps it from happening).
 */
const isBusy = (cause: unknown) =>
  typeof cause === "object" && cause !== null && "errcode" in cause && typeof cause.errcode === "number" &&
  (cause.errcode & 0xff) === 5 && cause.errcode !== 517

/** The waits between tries of a busy statement: 1 ms doubling to 50 ms, for `busyTimeout` in all. */
const busyRetry = (busyTimeout: Duration.Duration): Schedule.Schedule<unknown, Errors.SqlError> =>
  Schedule.max([
    Schedule.exponential(Duration.millis(1)).pipe(
      Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.millis(50))))
    ),
    Schedule.during(busyTimeout)
  ])

/**
 * What a synchronous node:sqlite call that threw comes to. Found busy, it was rejected whole
 * (nothing of it ran), so it is run again as it was (`again`) on `retry`'s timers: the event loop
 * runs meanwhile (SQLite's own busy handler would sleep inside the call), and this connection's
 * permit stays held, so the process's statements keep their order. Fails with the last busy
 * error once the wait is over. Only a call that threw builds any of this.
 */
const afterThrow = <A>(
  cause: unknown,
  again: () => A,
  failure: (cause: unknown) => Errors.SqlError,
  retry: Schedule.Schedule<unknown, Errors.SqlError>
): Effect.Effect<A, Errors.SqlError> =>
  isBusy(cause)
    ? Effect.andThen(
      Effect.sleep(Duration.millis(1)),
      Effect.retry(Effect.try({ try: again, catch: failure }), { schedule: retry, while: (error) => isBusy(error.reason.cause) })
    )
    : Effect.fail(failure(cause))

/** Bytes per page of a database this client creates (see make). */
export const PAGE_SIZE = 2048
/** Bytes of WAL after which a commit checkpoints: SQLite's default of 1,000 pages of 4 KB. */
export const WAL_CHECKPOINT_BYTES = 4096 * 1000

const prepareError = (cause: unknown) => sqlError(cause, "Failed to prepare statement", "prepare")

/**
 * A bare `LIMIT ?`. SQLite (3.54, node:sqlite's) reads that parameter's bound value while it
 * plans, so binding it marks the statement to be compiled again: every run of a claim, a list
 * page or a renewal parsed and planned its statement anew, as if it were not prepared. `+?` is
 * the same value to SQLite but not a bare parameter, so the statement is planned once, as it is
 * at its first prepare (before any value is bound). OFFSET's parameter does not do this.
 */
const LIMIT_PARAMETER = /\bLIMIT\s+\?/gi

const prepareNow = (db: DatabaseSync, sql: string): Prepared => {
  const statement = db.prepare(sql.replace(LIMIT_PARAMETER, "LIMIT +?"))
  return { statement, reader: statement.columns().length > 0, bigInts: false }
}

const prepare = (db: DatabaseSync, sql: string, retry: Schedule.Schedule<unknown, Errors.SqlError>): Effect.Effect<Prepared, Errors.SqlError> =>
  Effect.suspend(() => {
    try {
      return Effect.succeed(prepareNow(db, sql))
    } catch (cause) {
      return afterThrow(cause, () => prepareNow(db, sql), prepareError, retry)
    }
  })

/** Runs a prepared statement synchronously; throws node:sqlite's error. */
const execute = (prepared: Prepared, params: ReadonlyArray<unknown>, raw: boolean, safeIntegers: boolean) => {
  const { reader, statement } = prepared
  // Integers beyond 2^53 come back as BigInt only where asked (`SqlClient.SafeIntegers`);
  // otherwise node:sqlite refuses to read them (ERR_OUT_OF_RANGE) rather than round them.
  if (prepared.bigInts !== safeIntegers) {
    statement.setReadBigInts(safeIntegers)
    prepared.bigInts = safeIntegers
  }
  const args = params as Array<any>
  if (reader) return statement.all(...args) as ReadonlyArray<any>
  const result = statement.run(...args)
  return raw ? result as unknown as ReadonlyArray<any> : []
}

const executeError = (cause: unknown) => sqlError(cause, "Failed to execute statement", "execute")

const runPrepared = (
  prepared: Prepared,
  params: ReadonlyArray<unknown>,
  raw: boolean,
  retry: Schedule.Schedule<unknown, Errors.SqlError>
) =>
  Effect.withFiber<ReadonlyArray<any>, Errors.SqlError>((fiber) => {
    const safeIntegers = fiber.getRef(Client.SafeIntegers)
    try {
      return Effect.succeed(execute(prepared, params, raw, safeIntegers))
    } catch (cause) {
      return afterThrow(cause, () => execute(prepared, params, raw, safeIntegers), executeError, retry)
    }
  })

/** Rows as arrays of values: the statement answers arrays for this run only. */
const runPreparedValues = (prepared: Prepared, params: ReadonlyArray<unknown>, retry: Schedule.Schedule<unknown, Errors.SqlError>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => prepared.statement.setReturnArrays(true)),
    () => runPrepared(prepared, params, false, retry) as Effect.Effect<ReadonlyArray<ReadonlyArray<unknown>>, Errors.SqlError>,
    () => Effect.sync(() => prepared.statement.setReturnArrays(false))
  )

export const make = (
  options: SqliteClientConfig
): Effect.Effect<SqliteClient, never, Scope.Scope | Reactivity.Reactivity> =>
  Effect.gen(function*() {
    const compiler = Statement.makeCompilerSqlite(options.transformQueryNames)
    const transformRows = options.transformResultNames
      ? Statement.defaultTransforms(options.transformResultNames).array
      : undefined

    const scope = yield* Effect.scope
    // No busy handler of SQLite's own (timeout 0): a busy statement fails at once and is tried
    // again on timers (afterThrow) for the busy timeout.
    const db = new DatabaseSync(options.filename, { readOnly: options.readonly ?? false, timeout: 0 })
    const retry = busyRetry(Duration.fromInputUnsafe(options.busyTimeout ?? Duration.seconds(5)))
    yield* Scope.addFinalizer(scope, Effect.sync(() => db.close()))

    // A new database's pages are 2 KB rather than SQLite's 4 KB: a commit writes every page it
    // dirtied to the WAL whole, and submits of several accounts dirty a leaf per account in each
    // account-led index, so smaller pages write (and checksum) half the bytes for the same rows.
    // Only a file without tables yet takes it, so it comes before WAL mode, which fixes the size;
    // an existing database keeps its own.
    if (options.readonly !== true) db.exec(`PRAGMA page_size = ${PAGE_SIZE}`)
    // SQLite checkpoints (and fsyncs, blocking the event loop) after as many WAL pages as this:
    // the count that makes SQLite's default 4 MB at 4 KB pages, whatever the file's page size.
    const pageSize = Number(db.prepare("PRAGMA page_size").get()?.["page_size"] ?? PAGE_SIZE)
    db.exec(`PRAGMA wal_autocheckpoint = ${Math.round(WAL_CHECKPOINT_BYTES / pageSize)}`)
    if (options.disableWAL !== true) {
      // NORMAL: a commit waits for no fsync, the WAL is synced at checkpoints; a power cut can
      // lose the last commits, never corrupt the file. What the engine ran with before
      // (better-sqlite3 is built with SQLITE_DEFAULT_WAL_SYNCHRONOUS=1); node:sqlite's FULL
      // fsyncs every commit, about 1.5 to 3 ms of wall time per write on this machine's disk.
      db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
    }
    // 16 MB of page cache per connection, better-sqlite3's built-in default (SQLite's is 2 MB).
    db.exec("PRAGMA cache_size = -16000")

    // Prepared statements by their text, in a Map rather than Effect's Cache: Cache.get hashed
    // the whole SQL text in JavaScript and went through a Deferred on every statement. At
    // capacity the oldest prepared leaves (a hot one is prepared again once); no time to live,
    // as the statements the engine runs are the same few dozen for the process's life.
    const capacity = options.prepareCacheSize ?? 200
    const statements = new Map<string, Prepared>()
    const cached = (sql: string): Effect.Effect<Prepared, Errors.SqlError> => {
      const prepared = statements.get(sql)
      if (prepared !== undefined) return Effect.succeed(prepared)
      return Effect.map(prepare(db, sql, retry), (prepared) => {
        if (statements.size >= capacity) statements.delete(statements.keys().next().value!)
        statements.set(sql, prepared)
        return prepared
      })
    }

    const run = (sql: string, params: ReadonlyArray<unknown>, raw = false) => {
      const prepared = statements.get(sql)
      return prepared === undefined
        ? Effect.flatMap(cached(sql), (prepared) => runPrepared(prepared, params, raw, retry))
        : runPrepared(prepared, params, raw, retry)
    }

    const connection = identity<SqlConnection.Connection>({
      execute(sql, params, transformRows) {
        return transformRows ? Effect.map(run(sql, params), transformRows) : run(sql, params)
      },
      executeRaw(sql, params) {
        return run(sql, params, true)
      },
      executeValues(sql, params) {
        return Effect.flatMap(cached(sql), (prepared) => runPreparedValues(prepared, params, retry))
      },
      executeValuesUnprepared(sql, params) {
        return Effect.flatMap(prepare(db, sql, retry), (prepared) => runPreparedValues(prepared, params, retry))
      },
      executeUnprepared(sql, params, transformRows) {
        const effect = Effect.flatMap(prepare(db, sql, retry), (prepared) => runPrepared(prepared, params ?? [], false, retry))
        return transformRows ? Effect.map(effect, transformRows) : effect
      },
      executeStream(_sql, _params) {
        return Stream.die(new Error("executeStream not implemented"))
      }
    })

    // One connection, one statement at a time; a transaction holds the permit until it ends.
    const acquirers = Client.makeSqliteAcquirers({
      connection: Effect.succeed(connection),
      semaphore: yield* Semaphore.make(1),
      isTransaction: () => db.isTransaction
    })

    return Object.assign(
      (yield* Client.make({
        acquirer: acquirers.acquirer,
        borrower: acquirers.borrower,
        transactionAcquirer: acquirers.transactionAcquirer,
        onCommitFailure: acquirers.onCommitFailure,
        isTransaction: acquirers.isTransaction,
        // The write lock at BEGIN, where a busy lock is waited for. A deferred BEGIN's first read
        // takes a snapshot; if another process commits before this transaction's first write,
        // that write fails at once (SQLITE_BUSY_SNAPSHOT) and no wait can mend it. This process's
        // own statements are already one at a time (the permit), so it gives up no concurrency.
        // A read-only connection takes no write lock.
        beginTransaction: options.readonly === true ? "BEGIN" : "BEGIN IMMEDIATE",
        // BEGIN, COMMIT and the savepoints (named by depth, so a few texts) from the statement
        // cache: unprepared, each transaction parsed BEGIN IMMEDIATE and COMMIT again and made
        // four node:sqlite calls for each (prepare, columns, setReadBigInts, run).
        prepareTransactionControls: true,
        compiler,
        driver: "sqlite-node",
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
  Layer.effectContext(
    Effect.map(make(config), (client) => Context.make(SqliteClient, client).pipe(Context.add(Client.SqlClient, client)))
  ).pipe(Layer.provide(Reactivity.layer))
