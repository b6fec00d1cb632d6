import { PgConnection } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { layerPgClientWithPoolUse } from "../../adapters/sql/pgPool.js"
import { freshPostgresUrl, postgresAvailable } from "../support/postgres.js"

const pgUp = await postgresAvailable()

/** The engine's pool with one connection, so every statement and `pg_prepared_statements` read share a session. */
const onePool = (url: string, preparedStatements?: boolean) =>
  layerPgClientWithPoolUse({ url: Redacted.make(url), maxConnections: 1, preparedStatements })

/** Another session, for the schema changes a rolling upgrade makes under a running process. */
const otherSession = (url: string) => PgConnection.make({ url: Redacted.make(url) })

const withFreshDatabase = <A, E>(
  body: (url: string) => Effect.Effect<A, E, SqlClient.SqlClient | Scope.Scope>,
  preparedStatements?: boolean
) => Effect.flatMap(Effect.promise(freshPostgresUrl), (url) => body(url!).pipe(Effect.provide(onePool(url!, preparedStatements))))

const prepared = Effect.flatMap(Effect.service(SqlClient.SqlClient), (sql) =>
  sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.unprepared.pipe(
    Effect.map((rows) => rows.map((r) => r.statement))
  ))

if (!pgUp) {
  describe.skip("postgres: prepared statements (server not reachable)", () => {
    it("prepares repeated statements", () => undefined)
  })
} else {
  describe("postgres: prepared statements", () => {
    it.effect("a statement is prepared on its connection and answers as before when run again", () =>
      withFreshDatabase(() =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql`CREATE TABLE t (id INT PRIMARY KEY, a TEXT)`
          yield* sql`INSERT INTO t VALUES (1, 'one'), (2, 'two')`
          expect(yield* sql`SELECT a FROM t WHERE id = ${1}`).toEqual([{ a: "one" }])
          expect(yield* prepared).toContainEqual(expect.stringContaining("SELECT a FROM t WHERE id = $1"))
          expect(yield* sql`SELECT a FROM t WHERE id = ${2}`).toEqual([{ a: "two" }])
          expect(yield* sql`SELECT a FROM t WHERE id = ${1}`).toEqual([{ a: "one" }])
        })
      ))

    it.effect("a prepared statement a migration made stale is prepared afresh: at once outside a transaction, on the next run inside one", () =>
      withFreshDatabase((url) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const other = yield* otherSession(url)
          yield* sql`CREATE TABLE t (id INT PRIMARY KEY, a TEXT)`
          yield* sql`INSERT INTO t VALUES (1, 'one')`
          const row = sql`SELECT * FROM t WHERE id = ${1}`
          yield* row
          expect(yield* row).toEqual([{ id: 1, a: "one" }])
          // The prepared `SELECT *` no longer fits: PostgreSQL refuses to run it ("cached plan must not change result type").
          yield* other.query("ALTER TABLE t ADD COLUMN b INT NOT NULL DEFAULT 7")
          expect(yield* row).toEqual([{ id: 1, a: "one", b: 7 }])
          // That retry ran unnamed; this run prepares the text again.
          yield* row
          yield* other.query("ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 8")
          // In a transaction the refusal aborts it: the statement fails once, as any failed statement does.
          expect(Exit.isFailure(yield* Effect.exit(sql.withTransaction(row)))).toBe(true)
          expect(yield* sql.withTransaction(row)).toEqual([{ id: 1, a: "one", b: 7, c: 8 }])
        })
      ))

    it.effect("turned off, nothing is prepared", () =>
      withFreshDatabase(() =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          for (let i = 0; i < 3; i++) yield* sql`SELECT ${i}::int AS n`
          expect(yield* prepared).toEqual([])
        }), false))
  })
}
