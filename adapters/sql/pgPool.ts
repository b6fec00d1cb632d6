import { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer } from "effect"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import Pg from "pg"
import { installedPgVersions, internalsKnown, KNOWN_MAJORS, type PgVersions } from "./pgInternals.js"
import { PgPoolUse } from "./pgPoolUse.js"
import { shedRequests } from "./pgShedding.js"
import { makeStatementNames, preparingClient } from "./preparedStatements.js"

/**
 * pg-pool hands a freed connection to the next waiter synchronously, and a waiter whose query
 * was interrupted (@effect/sql-pg leaves it queued) hands it back synchronously too: a drain that
 * interrupts thousands of waiting queries recursed through them all and overflowed the stack.
 * Here each hand-over runs after the one before it returns, in a loop, in the same order.
 */
const handOverInTurn = (pool: Pg.Pool) => {
  const internals = pool as unknown as { _pulseQueue?: unknown }
  // A private method of pg-pool 3, used only on the majors it was written for (pgInternals.ts).
  // Should a release rename it, the pool runs unpatched rather than not at all, and
  // test/conformance/pgInternals.test.ts fails.
  if (typeof internals._pulseQueue !== "function") return pool
  const pulse = (internals._pulseQueue as () => void).bind(pool)
  let pulsing = false
  let again = false
  internals._pulseQueue = () => {
    if (pulsing) {
      again = true
      return
    }
    pulsing = true
    try {
      do {
        again = false
        pulse()
      } while (again)
    } finally {
      pulsing = false
    }
  }
  return pool
}

/** 5 s: long enough for a statement of a healthy store under load, short enough that a client still waits for its 503. */
export const DEFAULT_STORE_TIMEOUT_MS = 5_000

/** When the statement bound is on, and for how long; off while the store migrates (see `armStoreTimeout`). */
interface StatementBound {
  ms: number | undefined
}

/**
 * A `pg` client class whose callback statements fail after `bound.ms` without an answer: the
 * connection is then ended, so a statement still on its way or running never commits behind
 * its caller's 503 (a transaction ends rolled back), and the pool never hands the client out
 * again. A pg-cursor stream (no callback) is not bounded.
 */
const boundedClient = (Base: typeof Pg.Client, bound: StatementBound): typeof Pg.Client =>
  class BoundedClient extends Base {
    override query(...args: Array<any>): any {
      const ms = bound.ms
      const last = args.length - 1
      const callback = args[last] as unknown
      const run = () => (Base.prototype.query as (...args: Array<unknown>) => unknown).apply(this, args)
      if (ms === undefined || typeof callback !== "function") return run()
      let settled = false
      const timer = setTimeout(() => {
        settled = true
        this.end().catch(() => undefined)
        callback(new Error(`The store did not answer within ${ms} ms; the connection was closed`))
      }, ms)
      args[last] = (error: unknown, result: unknown) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        callback(error, result)
      }
      return run()
    }
  }

/** Turns the statement bound on; the stores arm it once migrated (migrations and their locks may rightly take longer). */
export class PgStatementBound extends Context.Tag("genjobs/PgStatementBound")<PgStatementBound, { readonly arm: Effect.Effect<void> }>() {}

export const armStoreTimeout = Effect.flatMap(PgStatementBound, (bound) => bound.arm)

export interface PgPoolOptions {
  /** `postgres://user:password@host:port/database`; a plain string or a `Redacted`. */
  readonly url: Secret
  /** Connections in the pool; `pg`'s default (10) when unset. */
  readonly maxConnections?: number | undefined
  /**
   * Statements run again and again are prepared on each connection (the default). Turn off
   * behind a pooler that cannot keep prepared statements (PgBouncer before 1.21 in transaction mode).
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

/** The private members of `pg` the patches use (pgInternals.ts), looked for on a pool and a client that never connect. */
const missingInternals = (pg: Pick<typeof Pg, "Pool" | "Client">): ReadonlyArray<string> => {
  const pool = new pg.Pool() as unknown as { _pulseQueue?: unknown; _pendingQueue?: unknown }
  const client = new pg.Client() as unknown as Record<string, unknown>
  return [
    ...(typeof pool._pulseQueue === "function" ? [] : ["pg-pool's _pulseQueue"]),
    ...(Array.isArray(pool._pendingQueue) ? [] : ["pg-pool's _pendingQueue"]),
    ...("_txStatus" in client ? [] : ["pg's client _txStatus"])
  ]
}

/**
 * Whether the pool is patched, and the warning when it is not. The installed versions decide
 * where their package.json files can be read. A bundler (Next.js, webpack) hides them (its
 * require.resolve answers a module id, not a path), and reading them there gave `installed: {}`
 * and a warning on every start: then the members the patches use decide, on the `pg` the bundle
 * actually holds.
 */
export const pgPatchPlan = (versions: PgVersions, pg: Pick<typeof Pg, "Pool" | "Client">): {
  readonly patch: boolean
  readonly warning: { readonly message: string; readonly details: Record<string, unknown> } | undefined
} => {
  const consequence = "the pool runs without the patch (a drain that interrupts thousands of queries may overflow the stack)"
  if (versions.pg !== undefined || versions["pg-pool"] !== undefined) {
    return internalsKnown(versions)
      ? { patch: true, warning: undefined }
      : {
        patch: false,
        warning: {
          message: `pg or pg-pool is of a release the pool patch was not written for: ${consequence}`,
          details: { installed: versions, writtenFor: KNOWN_MAJORS }
        }
      }
  }
  const missing = missingInternals(pg)
  return missing.length === 0
    ? { patch: true, warning: undefined }
    : { patch: false, warning: { message: `the installed pg lacks what the pool patch uses: ${consequence}`, details: { missing } } }
}

/**
 * PgClient over a `pg` pool the engine holds itself, so its use can be read for metrics
 * (`PgClient.layer` keeps its pool private). Opens as `PgClient.layer` does: one `SELECT 1`
 * within 5 s, and `end` on release.
 */
export const layerPgClientWithPoolUse = (options: PgPoolOptions) => {
  const timeoutMs = options.storeTimeoutMs ?? DEFAULT_STORE_TIMEOUT_MS
  const bound: StatementBound = { ms: undefined }
  const plan = pgPatchPlan(installedPgVersions(), Pg)
  const known = plan.patch
  const unknownVersions = plan.warning === undefined ? Effect.void : Effect.logWarning(plan.warning.message, plan.warning.details)
  const acquire = Effect.acquireRelease(
    Effect.sync(() => {
      const created = new Pg.Pool({
        connectionString: secretValue(options.url),
        max: options.maxConnections,
        application_name: "genjobs",
        // Bounds both the wait for a free connection and the opening of a new one.
        connectionTimeoutMillis: timeoutMs,
        Client: boundedClient(options.preparedStatements === false ? Pg.Client : preparingClient(makeStatementNames()), bound)
      })
      // Requests are shed rather than queued past their bound (pgShedding.ts).
      const pool = shedRequests(known ? handOverInTurn(created) : created, { prioritize: known })
      // A connection that drops while idle is reported here; the next query opens another.
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
  ).pipe(
    Effect.tap((pool) =>
      Effect.tryPromise({
        try: () => pool.query("SELECT 1"),
        catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
      }).pipe(Effect.timeoutFail({
        duration: Duration.seconds(5),
        onTimeout: () => new SqlError.SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
      }))
    )
  )
  return Layer.unwrapScoped(Effect.map(Effect.zipRight(unknownVersions, acquire), (pool) =>
    Layer.mergeAll(
      PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "genjobs" }),
      Layer.succeed(PgPoolUse, () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount })),
      Layer.succeed(PgStatementBound, { arm: Effect.sync(() => void (bound.ms = timeoutMs)) })
    )))
}
