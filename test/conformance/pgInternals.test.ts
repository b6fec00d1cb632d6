import { PgConnection } from "@effect/sql-pg"
import { Cause, Context, Effect, Exit, Fiber, Layer, Queue, Redacted, Schedule, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { describe, expect, it } from "vitest"
import { layerPgClientWithPoolUse, PgStatementBound } from "../../adapters/sql/pgPool.js"
import { PgPoolUse } from "../../adapters/sql/pgPoolUse.js"
import { freshPostgresUrl } from "../support/postgres.js"

// Undefined without a server, except under CI, where a missing server fails the run.
const url = await freshPostgresUrl()

/** The engine's pool, its statement bound armed at `timeoutMs`. */
const armedPool = (maxConnections: number, timeoutMs = 60_000) =>
  Layer.tap(
    layerPgClientWithPoolUse({ url: Redacted.make(url!), maxConnections, storeTimeoutMs: timeoutMs }),
    (context) => Context.get(context, PgStatementBound).arm
  )

const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | PgPoolUse | Scope.Scope>, layer = armedPool(2)) =>
  Effect.runPromise(Effect.scoped(Effect.provide(effect, layer)))

/** Checks `holds` every 10 ms until it does, for up to 5 s. */
const until = (holds: () => boolean) =>
  Effect.suspend(() => (holds() ? Effect.succeed(true) : Effect.succeed(false))).pipe(
    Effect.repeat({ schedule: Schedule.spaced("10 millis"), until: (held) => held, times: 500 }),
    Effect.flatMap((held) => (held ? Effect.void : Effect.die(new Error("not within 5 s"))))
  )

/**
 * What the store relies on from @effect/sql-pg's sessions and its own pool over them
 * (adapters/sql/pgPool.ts, adapters/sql/pgShedding.ts, adapters/sql/pgListener.ts), checked on the installed release.
 */
describe.skipIf(url === undefined)("the PostgreSQL driver under the store", () => {
  it("reads 64-bit integers exactly, as bigint", () =>
    run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ n: bigint }>`SELECT 9007199254740993::bigint AS n, ${-123456789012}::bigint AS m`
      expect(row).toEqual({ n: 9007199254740993n, m: -123456789012n })
    })))

  it("interrupting thousands of callers queued for a connection neither overflows the stack nor loses a connection", () =>
    run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const use = yield* PgPoolUse
      const holders = yield* Effect.forkChild(Effect.all([sql`SELECT pg_sleep(1)`, sql`SELECT pg_sleep(1)`], { concurrency: 2 }))
      yield* until(() => use().total === 2 && use().idle === 0)
      const queued = yield* Effect.forkChild(Effect.all(Array.from({ length: 5_000 }, (_, i) => sql`SELECT ${i}::int AS n`), { concurrency: "unbounded" }))
      yield* until(() => use().waiting === 5_000)
      yield* Fiber.interrupt(queued)
      expect(use().waiting).toBe(0)
      yield* Fiber.join(holders)
      // Both connections serve again.
      expect(yield* Effect.all([sql`SELECT 1 AS n`, sql`SELECT 2 AS n`], { concurrency: 2 })).toEqual([[{ n: 1 }], [{ n: 2 }]])
    })))

  it("a statement without an answer within the bound fails at the bound, its connection closed and its transaction never committed", () =>
    run(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE bounded (id INT PRIMARY KEY)`
        const started = performance.now()
        const exit = yield* Effect.exit(sql.withTransaction(Effect.andThen(sql`INSERT INTO bounded VALUES (1)`, sql`SELECT pg_sleep(5)`)))
        expect(Exit.isFailure(exit)).toBe(true)
        expect(performance.now() - started).toBeLessThan(2_000)
        expect(String(Cause.squash((exit as Exit.Failure<unknown, unknown>).cause))).toMatch(/did not answer within 500 ms/)
        // Never committed; and the pool serves on another connection.
        expect(yield* sql`SELECT id FROM bounded`).toEqual([])
      }),
      armedPool(2, 500)
    ))

  it("a pooled connection whose backend is terminated is replaced: the statements after it are served", () =>
    run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* Effect.all([sql`SELECT 1`, sql`SELECT 1`], { concurrency: 2 })
      // Idle: the pool drops it once its end is heard.
      yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'genjobs' AND datname = current_database() AND pid <> pg_backend_pid()`
      yield* Effect.sleep("50 millis")
      yield* Effect.all([sql`SELECT 1`, sql`SELECT 1`], { concurrency: 2 })
      // In use: the statement fails, and the next one is served at once on another connection.
      expect(Exit.isFailure(yield* Effect.exit(sql`SELECT pg_terminate_backend(pg_backend_pid())`))).toBe(true)
      expect(yield* sql<{ n: number }>`SELECT 1::int AS n`).toEqual([{ n: 1 }])
    })))

  it("backends terminated again and again under load: transactions fail with a SqlError, never a defect, and the pool serves after", () =>
    run(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE killed (id SERIAL PRIMARY KEY)`
        const until = Date.now() + 1_500
        const exits: Array<Exit.Exit<unknown, unknown>> = []
        const transaction = Effect.exit(sql.withTransaction(Effect.andThen(sql`INSERT INTO killed DEFAULT VALUES`, sql`SELECT count(*) FROM killed`)))
          .pipe(Effect.map((exit) => void exits.push(exit)))
        const load = Effect.forEach(
          Array.from({ length: 20 }),
          () => Effect.whileLoop({ while: () => Date.now() < until, body: () => transaction, step: () => undefined }),
          { concurrency: "unbounded", discard: true }
        )
        const kill = Effect.whileLoop({
          while: () => Date.now() < until - 300,
          body: () =>
            Effect.andThen(
              PgConnection.make({ url: Redacted.make(url!), applicationName: "genjobs killer" }).pipe(
                Effect.flatMap((killer) =>
                  killer.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'genjobs' AND datname = current_database()`)
                ),
                Effect.scoped
              ),
              Effect.sleep("150 millis")
            ),
          step: () => undefined
        })
        yield* Effect.all([load, kill], { concurrency: 2 })
        expect(exits.filter((exit) => Exit.isFailure(exit) && Cause.hasDies(exit.cause))).toEqual([])
        expect(exits.filter(Exit.isFailure).length).toBeGreaterThan(0)
        yield* Effect.sleep("100 millis")
        expect(yield* sql<{ n: number }>`SELECT 1::int AS n`).toEqual([{ n: 1 }])
      }),
      armedPool(5, 2_000)
    ))

  it("a LISTEN queue fails when its session's backend is terminated (how the listener hears a drop)", () =>
    run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const session = yield* PgConnection.make({ url: Redacted.make(url!), applicationName: "genjobs probe" })
      const pinned = yield* session.pin
      const queue = yield* pinned.listen("probe")
      yield* sql`SELECT pg_notify('probe', 'one')`
      expect((yield* Queue.take(queue)).payload).toBe("one")
      yield* sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'genjobs probe'`
      const next = yield* Effect.exit(Queue.take(queue))
      expect(Exit.isFailure(next) && !Cause.hasInterruptsOnly(next.cause)).toBe(true)
    })))
})
