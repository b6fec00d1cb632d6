import { Effect, Exit, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { spawn } from "node:child_process"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { tempDataDir } from "../support/serverProcess.js"

// The engine's SQLite client (adapters/sql/sqliteNode) on its own: what the stores rely on.
const file = join(tempDataDir(), "client.db")
const runtime = ManagedRuntime.make(SqliteClient.layer({ filename: file }))
afterAll(() => runtime.dispose())

const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => runtime.runPromise(effect)
const sql = Effect.flatMap(SqlClient.SqlClient, Effect.succeed)

class Boom {
  readonly _tag = "Boom"
}

describe("the node:sqlite SqlClient", () => {
  it("opens the file as better-sqlite3 did: WAL, synchronous NORMAL, foreign keys on, 16 MB cache; no busy handler of SQLite's own", async () => {
    const pragmas = await run(Effect.flatMap(sql, (sql) =>
      Effect.all([
        sql`PRAGMA journal_mode`,
        sql`PRAGMA synchronous`,
        sql`PRAGMA foreign_keys`,
        sql`PRAGMA cache_size`,
        sql`PRAGMA busy_timeout`
      ])
    ))
    expect(pragmas.map((rows) => Object.values(rows[0]!)[0])).toEqual(["wal", 1, 1, -16000, 0])
  })

  it("commits a transaction, and rolls back a nested one to its savepoint only", async () => {
    const rows = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE tx (n INTEGER NOT NULL)`
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO tx (n) VALUES (1)`
        yield* Effect.exit(sql.withTransaction(Effect.andThen(sql`INSERT INTO tx (n) VALUES (2)`, Effect.fail(new Boom()))))
        yield* sql`INSERT INTO tx (n) VALUES (3)`
      }))
      yield* Effect.exit(sql.withTransaction(Effect.andThen(sql`INSERT INTO tx (n) VALUES (4)`, Effect.fail(new Boom()))))
      return yield* sql<{ n: number }>`SELECT n FROM tx ORDER BY n`
    }))
    expect(rows.map((row) => row.n)).toEqual([1, 3])
  })

  it("keeps 64-bit money exact: BigInt where SafeIntegers asks, a failure rather than a rounded number elsewhere", async () => {
    const big = 2n ** 62n + 1n
    const { before, exact, plain } = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE money (micro_cents INTEGER NOT NULL)`
      yield* sql`INSERT INTO money ${sql.insert({ micro_cents: big })}`
      // One statement text, so one prepared statement: each run reads as it asks, whatever the run before asked.
      const before = yield* Effect.exit(sql`SELECT micro_cents FROM money`)
      const exact = yield* Effect.provideService(sql<{ micro_cents: bigint }>`SELECT micro_cents FROM money`, SqlClient.SafeIntegers, true)
      const plain = yield* Effect.exit(sql`SELECT micro_cents FROM money`)
      return { before, exact, plain }
    }))
    expect(exact).toEqual([{ micro_cents: big }])
    for (const exit of [before, plain]) expect(Exit.isFailure(exit) && String(exit.cause)).toMatch(/Failed to execute statement/)
  })

  it("rolls back a transaction whose COMMIT is refused, and commits the next one", async () => {
    const { failed, rows } = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE parent (id INTEGER PRIMARY KEY)`
      yield* sql`CREATE TABLE child (parent_id INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`
      // The foreign key is checked at COMMIT, which fails with the transaction still open.
      const failed = yield* Effect.exit(sql.withTransaction(sql`INSERT INTO child (parent_id) VALUES (1)`))
      yield* sql.withTransaction(Effect.andThen(sql`INSERT INTO parent (id) VALUES (2)`, sql`INSERT INTO child (parent_id) VALUES (2)`))
      return { failed, rows: yield* sql<{ parent_id: number }>`SELECT parent_id FROM child` }
    }))
    expect(Exit.isFailure(failed)).toBe(true)
    expect(rows).toEqual([{ parent_id: 2 }])
  })

  it("answers a write's changes raw, and rows as arrays for values()", async () => {
    const [raw, values] = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)`
      yield* sql`INSERT INTO kv (k, v) VALUES ('a', 1), ('b', 2)`
      const raw = yield* sql`UPDATE kv SET v = v + 1`.raw
      const values = yield* sql`SELECT k, v FROM kv ORDER BY k`.values
      return [raw, values] as const
    }))
    expect(raw).toMatchObject({ changes: 2 })
    expect(values).toEqual([["a", 2], ["b", 3]])
  })

  /** Another process (the CLI, say) holding the write lock for `ms`, once it says it holds it. */
  const holdWriteLock = async (ms: number) => {
    const holder = spawn(process.execPath, ["-e", `
      const db = new (require("node:sqlite").DatabaseSync)(${JSON.stringify(file)})
      db.exec("BEGIN IMMEDIATE; INSERT INTO locks (n) VALUES (1)")
      process.stdout.write("locked")
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${ms})
      db.exec("COMMIT")
    `], { stdio: ["ignore", "pipe", "inherit"] })
    const exited = new Promise((resolve) => holder.once("exit", resolve))
    await new Promise((resolve) => holder.stdout.once("data", resolve))
    return { exited }
  }

  it("waits for another process's write lock instead of failing at once, with the event loop running meanwhile", async () => {
    await run(Effect.flatMap(sql, (sql) => sql`CREATE TABLE locks (n INTEGER)`))
    const { exited } = await holdWriteLock(500)
    // A timer of 10 ms keeps ticking while the insert waits: the wait is not inside SQLite's call.
    let ticks = 0
    const ticker = setInterval(() => ticks++, 10)
    try {
      await run(Effect.flatMap(sql, (sql) => sql`INSERT INTO locks (n) VALUES (2)`))
    } finally {
      clearInterval(ticker)
    }
    expect(await exited).toBe(0)
    expect(ticks).toBeGreaterThan(5)
    const rows = await run(Effect.flatMap(sql, (sql) => sql<{ n: number }>`SELECT n FROM locks ORDER BY n`))
    expect(rows.map((row) => row.n)).toEqual([1, 2])
  })

  it("commits a transaction that read before another process's write: it takes the write lock at BEGIN", async () => {
    await run(Effect.flatMap(sql, (sql) => sql`DELETE FROM locks`))
    const { exited } = await holdWriteLock(300)
    // A deferred BEGIN would read here, then fail at the insert (its snapshot stale after the other commit).
    const counted = await run(Effect.flatMap(sql, (sql) =>
      sql.withTransaction(Effect.gen(function*() {
        const [{ n }] = yield* sql<{ n: number }>`SELECT count(*) AS n FROM locks`
        yield* sql`INSERT INTO locks (n) VALUES (${n + 10})`
        return n
      }))))
    expect(await exited).toBe(0)
    expect(counted).toBe(1)
    const rows = await run(Effect.flatMap(sql, (sql) => sql<{ n: number }>`SELECT n FROM locks ORDER BY n`))
    expect(rows.map((row) => row.n)).toEqual([1, 11])
  })

  it("fails with a lock timeout once the busy timeout is over", async () => {
    const short = ManagedRuntime.make(SqliteClient.layer({ filename: file, busyTimeout: 100 }))
    try {
      const { exited } = await holdWriteLock(1_000)
      const exit = await short.runPromiseExit(Effect.flatMap(sql, (sql) => sql`INSERT INTO locks (n) VALUES (3)`))
      expect(await exited).toBe(0)
      expect(Exit.isFailure(exit) ? String(exit.cause) : "succeeded").toMatch(/LockTimeoutError/)
    } finally {
      await short.dispose()
    }
  })
})
