import { Effect, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { DatabaseSync } from "node:sqlite"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { tempDataDir } from "../support/serverProcess.js"

/** The file's page size and a row written and read back through the engine's client. */
const openWithClient = async (file: string) => {
  const runtime = ManagedRuntime.make(SqliteClient.layer({ filename: file }))
  try {
    return await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE IF NOT EXISTS t (n INTEGER)`
      yield* sql`INSERT INTO t (n) VALUES (1)`
      const [size] = yield* sql<{ page_size: number }>`PRAGMA page_size`
      const [checkpoint] = yield* sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`
      const [count] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM t`
      return { pageSize: size!.page_size, checkpointBytes: checkpoint!.wal_autocheckpoint * size!.page_size, rows: count!.n }
    }))
  } finally {
    await runtime.dispose()
  }
}

describe("the SQLite client's page size", () => {
  // SQLite's default checkpoint, 1,000 pages, is 4 MB of WAL at 4 KB pages: kept in bytes, so smaller pages fsync no more often.
  it("a database it creates has 2 KB pages, in WAL mode, checkpointed every 4 MB of WAL", async () => {
    const file = join(tempDataDir(), "new.db")
    expect(await openWithClient(file)).toStrictEqual({ pageSize: SqliteClient.PAGE_SIZE, checkpointBytes: 4_096_000, rows: 1 })
    expect(SqliteClient.PAGE_SIZE).toBe(2048)
    const db = new DatabaseSync(file)
    expect(db.prepare("PRAGMA journal_mode").get()?.["journal_mode"]).toBe("wal")
    db.close()
  })

  it("a database made before keeps its own page size, and its rows", async () => {
    const file = join(tempDataDir(), "old.db")
    const db = new DatabaseSync(file)
    db.exec("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER); INSERT INTO t (n) VALUES (0)")
    db.close()
    expect(await openWithClient(file)).toStrictEqual({ pageSize: 4096, checkpointBytes: 4_096_000, rows: 2 })
  })
})
