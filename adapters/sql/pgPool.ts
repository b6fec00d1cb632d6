import { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer } from "effect"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import Pg from "pg"
import { PgPoolUse } from "./pgPoolUse.js"
import { makeStatementNames, preparingClient } from "./preparedStatements.js"

/**
 * pg-pool hands a freed connection to the next waiter synchronously, and a waiter whose query
 * was interrupted (@effect/sql-pg leaves it queued) hands it back synchronously too: a drain that
 * interrupts thousands of waiting queries recursed through them all and overflowed the stack.
 * Here each hand-over runs after the one before it returns, in a loop, in the same order.
 */
const handOverInTurn = (pool: Pg.Pool) => {
  const internals = pool as unknown as { _pulseQueue?: unknown }
  // A private method of pg-pool 3 (the range package.json allows). Should a release rename it,
  // the pool runs unpatched rather than not at all, and the drain test in
  // test/conformance/postgres.test.ts ("interrupting 10,000 queries") fails.
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
}

/**
 * PgClient over a `pg` pool the engine holds itself, so its use can be read for metrics
 * (`PgClient.layer` keeps its pool private). Opens as `PgClient.layer` does: one `SELECT 1`
 * within 5 s, and `end` on release.
 */
export const layerPgClientWithPoolUse = (options: PgPoolOptions) => {
  const acquire = Effect.acquireRelease(
    Effect.sync(() => {
      const pool = handOverInTurn(
        new Pg.Pool({
          connectionString: secretValue(options.url),
          max: options.maxConnections,
          application_name: "genjobs",
          ...(options.preparedStatements === false ? {} : { Client: preparingClient(makeStatementNames()) })
        })
      )
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
  return Layer.unwrapScoped(Effect.map(acquire, (pool) =>
    Layer.merge(
      PgClient.layerFromPool({ acquire: Effect.succeed(pool), applicationName: "genjobs" }),
      Layer.succeed(PgPoolUse, () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }))
    )))
}
