import { PgClient, PgConnection } from "@effect/sql-pg"
import { Cause, Context, Duration, Effect, Layer, Pool, Redacted, type Scope, Stream } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import { Reactivity } from "effect/reactivity"
import { SqlClient, type SqlConnection, SqlError, Statement } from "effect/sql"
import * as Net from "node:net"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { PgPoolUse } from "./pgPoolUse.js"
import { makePoolAdmission, type PoolAdmission } from "./pgShedding.js"

/** 5 s: long enough for a statement of a healthy store under load, short enough that a client still waits for its 503. */
export const DEFAULT_STORE_TIMEOUT_MS = 5_000

/** Connections in the pool when `maxConnections` is unset. */
const DEFAULT_CONNECTIONS = 10

/**
 * How many statements each connection keeps prepared (least recently used ones are closed). A
 * named statement is parsed once per connection, and PostgreSQL plans it once when a generic
 * plan costs no more than fresh ones: that halved the database's CPU time per submit (0.65 to
 * 0.31 ms), most of it planning the submit's statement. The engine runs well under this many
 * distinct texts again and again; one-off texts (a VALUES list of a size seen once) are evicted
 * rather than held on the server.
 */
const PREPARED_STATEMENTS_PER_CONNECTION = 256

/** How long a connection stays open unused (pg's pool closed them after 10 s too). */
const IDLE_TIMEOUT = Duration.seconds(10)

/** When the statement bound is on, and for how long; off while the store migrates (see `armStoreTimeout`). */
interface StatementBound {
  ms: number | undefined
}

/** Turns the statement bound on; the stores arm it once migrated (migrations and their locks may rightly take longer). */
export class PgStatementBound extends Context.Service<PgStatementBound, { readonly arm: Effect.Effect<void> }>()(
  "genjobs/PgStatementBound"
) {}

export const armStoreTimeout = Effect.flatMap(Effect.service(PgStatementBound), (bound) => bound.arm)

export interface PgPoolOptions {
  /** `postgres://user:password@host:port/database`; a plain string or a `Redacted`. */
  readonly url: Secret
  /** Connections in the pool; 10 when unset. */
  readonly maxConnections?: number | undefined
  /**
   * Statements are prepared on each connection (the default). Turn off behind a pooler that
   * cannot keep prepared statements (PgBouncer before 1.21 in transaction mode).
   */
  readonly preparedStatements?: boolean | undefined
  /**
   * How long a caller waits on the store before its StoreError (a request's 503 with
   * Retry-After): for a connection from the pool, for a new connection, and for each
   * statement's answer. Default 5000 ms. A request's first wait for a pooled connection has
   * the shorter bound the HTTP layer gives it (`storeWaitMs`), past which it is shed.
   */
  readonly storeTimeoutMs?: number | undefined
}

/**
 * Where the URL says the server is, as the driver reads it (libpq URI: authority, or the
 * `host`/`port` parameters; a host that is a directory names a unix socket).
 */
type Address = { readonly host: string; readonly port: number } | { readonly path: string }

const addressOf = (url: string): Address => {
  const parsed = new URL(url)
  const authority = parsed.hostname.startsWith("[") ? parsed.hostname.slice(1, -1) : decodeURIComponent(parsed.hostname)
  const host = parsed.searchParams.get("host") ?? (authority === "" ? "localhost" : authority)
  const port = Number(parsed.searchParams.get("port") ?? (parsed.port === "" ? 5432 : parsed.port))
  return host.startsWith("/") ? { path: `${host}/.s.PGSQL.${port}` } : { host, port }
}

/** The pool's unit: a session, the socket under it (ours, so a statement bound can close it), and the statement runner over both. */
interface Pooled {
  readonly session: PgConnection.PgConnection
  readonly socket: Net.Socket
  readonly connection: SqlConnection.Connection
}

const rowsOf = (result: PgConnection.Result) => result.rows

/** Whether a statement failed because its session is gone (closed, broken, out of step): the driver then reports a ConnectionError. */
const lostConnection = (cause: Cause.Cause<SqlError.SqlError>) => {
  const error = Cause.findErrorOption(cause)
  return error._tag === "Some" && error.value.reason._tag === "ConnectionError"
}

/**
 * Runs statements on one session. Each statement that finds the bound on fails after `bound.ms`
 * without an answer: its socket is then destroyed, so a statement still on its way or running
 * never commits behind its caller's 503 (a transaction ends rolled back), and the session is
 * gone from the pool. A statement interrupted in flight retires the session too: the driver
 * cancels it, and a cancel the server did not confirm could still land on the next statement;
 * so does one that found its session gone, before its caller hands it back to the pool.
 * A stream is not bounded.
 */
class BoundedConnection implements SqlConnection.Connection {
  constructor(
    readonly session: PgConnection.PgConnection,
    readonly socket: Net.Socket,
    readonly bound: StatementBound,
    readonly retire: Effect.Effect<void>
  ) {}

  private run<A>(statement: Effect.Effect<A, SqlError.SqlError>): Effect.Effect<A, SqlError.SqlError> {
    return Effect.suspend(() => {
      const ms = this.bound.ms
      let late = false
      const timer = ms === undefined ? undefined : setTimeout(() => {
        late = true
        this.socket.destroy()
      }, ms)
      const guarded = Effect.onExitPrimitive(statement, (exit) => {
        clearTimeout(timer)
        return exit._tag === "Failure" && (Cause.hasInterrupts(exit.cause) || lostConnection(exit.cause)) ? this.retire : undefined
      })
      if (ms === undefined) return guarded
      return Effect.mapError(guarded, (error) =>
        late
          ? new SqlError.SqlError({
            reason: new SqlError.ConnectionError({
              cause: error,
              message: `The store did not answer within ${ms} ms; the connection was closed`,
              operation: "query"
            })
          })
          : error)
    })
  }

  execute(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const rows = this.run(Effect.map(this.session.query(sql, params), rowsOf))
    return transformRows ? Effect.map(rows, transformRows) : rows
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.run(this.session.query(sql, params))
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.run(this.session.queryValues(sql, params))
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.run(this.session.queryValues(sql, params, false))
  }
  executeUnprepared(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const rows = this.run(Effect.map(this.session.query(sql, params, false), rowsOf))
    return transformRows ? Effect.map(rows, transformRows) : rows
  }
  executeStream(
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) {
    const stream = this.session.stream(sql, params)
    return transformRows
      ? Stream.mapArray(stream, (rows) => transformRows(rows) as NonEmptyReadonlyArray<PgConnection.Row>)
      : stream
  }
}

/** PostgreSQL answers `ROLLBACK` to the `COMMIT` of an aborted transaction: that is a failure. */
const commit = (connection: SqlConnection.Connection): Effect.Effect<void, SqlError.SqlError> =>
  Effect.flatMap(
    connection.executeRaw("COMMIT", []) as Effect.Effect<PgConnection.Result, SqlError.SqlError>,
    (result) =>
      result.command === "ROLLBACK"
        ? Effect.fail(
          new SqlError.SqlError({
            reason: new SqlError.UnknownError({
              cause: new Error("COMMIT rolled back an aborted transaction"),
              message: "COMMIT rolled back an aborted transaction",
              operation: "commit"
            })
          })
        )
        : Effect.void
  )

/** What a lent session that turned out dead answers, for another to be lent. */
const DEAD: unique symbol = Symbol("genjobs/PgPool/dead")

interface PgJson extends Statement.Custom<"PgJson", unknown> {}
/** What `PgClient.makeCompiler` binds as jsonb. */
const PgJson = Statement.custom<PgJson>("PgJson")

/**
 * The store's PgClient: @effect/sql-pg's sessions, in a pool the engine holds itself, so that
 * callers are admitted to it in turn and shed (pgShedding.ts), its use can be read for metrics,
 * and each statement is bounded. `PgClient.layer` keeps its pool, and the sockets under it,
 * private.
 */
const makeStoreClient = Effect.fnUntraced(function*(options: PgPoolOptions, bound: StatementBound) {
  const timeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS
  const connections = options.maxConnections ?? DEFAULT_CONNECTIONS
  const url = secretValue(options.url)
  const config: PgClient.PgPoolConfig = {
    url: Redacted.make(url),
    applicationName: "genjobs",
    maxConnections: connections,
    // Bounds the opening of a new connection (the admission bounds the wait for one).
    connectTimeout: Duration.millis(timeoutMs),
    prepare: options.preparedStatements !== false,
    preparedStatementCacheSize: PREPARED_STATEMENTS_PER_CONNECTION
  }
  const address = addressOf(url)
  const runFork = Effect.runForkWith(yield* Effect.context<never>())

  // Assigned below, once the pool exists; `open` only runs when the pool opens a connection.
  let pool: Pool.Pool<Pooled, SqlError.SqlError>
  const open = Effect.suspend(() => {
    let socket: Net.Socket | undefined
    let retire: Effect.Effect<void> | undefined
    // The driver dials through this for the session, and again for each cancel request: the first is the session's.
    const stream = () => {
      // No Nagle: a statement is one write, then a wait for its answer (the driver's own dial does the same).
      const dialed = Net.connect("path" in address ? address : { ...address, noDelay: true })
      // The driver hears the socket's end through its close; under TLS it listens on the TLS socket only.
      dialed.on("error", () => undefined)
      if (socket === undefined) {
        socket = dialed
        // Heard before the driver's own close (listeners run in order): a session that drops,
        // idle or not, leaves the pool before the driver fails the statements on it, whose
        // callers would otherwise find it idle again at once.
        dialed.once("close", () => {
          if (retire !== undefined) runFork(retire)
        })
      }
      return dialed
    }
    // `socket` is set once the session is made: the driver dials before anything else.
    return Effect.map(PgConnection.make({ ...config, stream }), (session) => {
      const drop = Effect.suspend(() => Pool.invalidate(pool, pooled))
      const pooled: Pooled = { session, socket: socket!, connection: new BoundedConnection(session, socket!, bound, drop) }
      retire = drop
      return pooled
    })
  })
  pool = yield* Pool.makeWithTTL({ acquire: open, min: 0, max: connections, timeToLive: IDLE_TIMEOUT, timeToLiveStrategy: "usage" })

  const admission: PoolAdmission = makePoolAdmission({ connections, storeTimeoutMs: timeoutMs })
  // A session the driver found dead a moment ago (its socket destroyed, the close not yet
  // heard) is dropped at checkout and another taken, rather than failing the statement.
  const live: Effect.Effect<Pooled, SqlError.SqlError, Scope.Scope> = Effect.flatMap(Pool.get(pool), (pooled) =>
    pooled.socket.destroyed ? Effect.andThen(Pool.invalidate(pool, pooled), live) : Effect.succeed(pooled))
  const checkout = Effect.andThen(admission.admitScoped, live)
  const lend = <A, E, R>(f: (connection: SqlConnection.Connection) => Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError.SqlError, R> =>
    Effect.flatMap(
      Pool.use(pool, (pooled): Effect.Effect<A | typeof DEAD, E, R> =>
        pooled.socket.destroyed ? Effect.as(Pool.invalidate(pool, pooled), DEAD) : f(pooled.connection)),
      // TypeScript does not narrow a generic `A | typeof DEAD` by `!== DEAD`: whatever is not DEAD is `f`'s A.
      (result) => result === DEAD ? lend(f) : Effect.succeed(result as A)
    )
  const borrow: SqlConnection.Borrower = (f) => admission.admit(lend(f))

  const client = yield* SqlClient.make({
    acquirer: Effect.map(checkout, (pooled) => pooled.connection),
    borrower: borrow,
    transactionAcquirer: Effect.map(checkout, (pooled) => pooled.connection),
    compiler: PgClient.makeCompiler(),
    driver: "pg",
    // PostgreSQL prepares transaction control like any other statement.
    prepareTransactionControls: true,
    commit,
    releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
    // A session that is gone has no transaction left to roll back (the server ended it with the
    // session): its ROLLBACK would only fail, and SqlClient turns a failed rollback into a defect.
    isTransaction: (connection) => !(connection instanceof BoundedConnection && connection.socket.destroyed),
    spanAttributes: [
      ["db.system.name", "postgresql"],
      ["db.namespace", new URL(url).pathname.slice(1) || "postgres"],
      ["server.address", "host" in address ? address.host : address.path],
      ["server.port", "port" in address ? address.port : 5432]
    ]
  })
  const pgClient: PgClient.PgClient = Object.assign(client, {
    [PgClient.TypeId]: PgClient.TypeId,
    config,
    json: (value: unknown) => Statement.fragment([PgJson(value, undefined, undefined)]),
    listen: (channel: string) => Effect.flatMap(checkout, (pooled) => pooled.session.listen(channel)),
    notify: (channel: string, payload: string) =>
      Effect.asVoid(borrow((connection) => connection.executeRaw("SELECT pg_notify($1, $2)", [channel, payload])))
  })
  const use = () => {
    const stats = Effect.runSync(Pool.stats(pool))
    return { total: stats.idle + stats.used, idle: stats.idle, waiting: admission.waiting() }
  }
  return { client: pgClient, use }
})

/**
 * PgClient (and SqlClient) over a pool the engine holds itself (`makeStoreClient`), with its
 * use (PgPoolUse) and the statement bound's switch (PgStatementBound). Opens as the pg pool did:
 * one `SELECT 1` within 5 s.
 */
export const layerPgClientWithPoolUse = (options: PgPoolOptions) => {
  const timeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS
  const bound: StatementBound = { ms: undefined }
  return Layer.effectContext(Effect.gen(function*() {
    const { client, use } = yield* makeStoreClient(options, bound)
    yield* client`SELECT 1`.pipe(Effect.timeoutOrElse({
      duration: Duration.seconds(5),
      orElse: () =>
        Effect.fail(
          new SqlError.SqlError({
            reason: new SqlError.ConnectionError({
              cause: new Error("Connection timed out"),
              message: "PgClient: Connection timed out",
              operation: "connect"
            })
          })
        )
    }))
    return Context.make(PgClient.PgClient, client).pipe(
      Context.add(SqlClient.SqlClient, client),
      Context.add(PgPoolUse, use),
      Context.add(PgStatementBound, { arm: Effect.sync(() => void (bound.ms = timeoutMs)) })
    )
  })).pipe(Layer.provide(Reactivity.layer))
}
