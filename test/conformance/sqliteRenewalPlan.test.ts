import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { T0 } from "./fixtures.js"
import { sentStatement } from "./sentStatement.js"

/**
 * A lease renewal on SQLite costs what its own leases do, whatever else is processing: the lease
 * keeper renews thousands of leases in chunks, one statement each, and a statement that read
 * every processing job would cost each chunk what all of them do. The table is left empty:
 * without statistics SQLite plans as for large tables.
 */

const file = join(mkdtempSync(join(tmpdir(), "genjobs-renewal-plan-")), "plan.db")

/** The store, and a second connection to the same file to explain its statement on. */
const stores = Layer.merge(layerSqlite({ filename: file }), SqliteClient.layer({ filename: file }))

// A runtime of the file's own, not @effect/vitest's `layer` (see sqliteListPlans.test.ts).
const runtime = ManagedRuntime.make(stores)
afterAll(() => runtime.dispose())

describe("sqlite: a lease renewal", () => {
  it("finds its jobs by id, the status a filter on them", () =>
    runtime.runPromise(Effect.gen(function*() {
      const jobs = yield* JobRepo
      const leases = [{ id: "job_a" as JobId, workerId: "w1" }, { id: "job_b" as JobId, workerId: "w2" }]
      const [text, params] = yield* sentStatement(jobs.renewLeases(leases, T0, 60_000))
      const sql = yield* SqlClient.SqlClient
      const plan = (yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)).map((row) => row.detail)
      expect(plan[0], `${text}\n${plan.join("\n")}`).toMatch(/^SEARCH \S+ USING INDEX sqlite_autoindex_genjobs_jobs_1 \(id=\?\)$/)
    })))
})
