import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeLeaseClock } from "../../adapters/sql/queue/context.js"
import { makeProviderLimitStatements } from "../../adapters/sql/queue/providerLimits.js"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { layerSqlTables, SqlTables } from "../../adapters/sql/tables.js"
import { T0 } from "./fixtures.js"
import { sentStatements } from "./sentStatement.js"

/**
 * SQLite reads a limited claim's count of jobs in flight and its probe for waiting jobs from the
 * version indexes of processing and pending jobs, a search a version. SQLite keeps no statistics
 * here (the engine runs no ANALYZE), and with `(model, version) IN (VALUES ...)` both were read
 * from the status index: every processing, or pending, job of every version, each claim.
 */

const file = join(mkdtempSync(join(tmpdir(), "genjobs-limit-plans-")), "plans.db")
const stores = Layer.merge(layerSqlite({ filename: file }), SqliteClient.layer({ filename: file }))
// A runtime of the file's own, not @effect/vitest's `layer` (see sqliteListPlans.test.ts).
const runtime = ManagedRuntime.make(stores)
afterAll(() => runtime.dispose())

const versions = [{ model: "limited/x", version: "v1" }, { model: "limited/y", version: "v1" }]

/** Every line of the plans of the statements `run` sends. */
const plansOf = <E, R>(run: Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const plans: Array<string> = []
    for (const [text, params] of yield* sentStatements(run)) {
      plans.push(...(yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)).map((row) => row.detail))
    }
    return plans
  })

describe("sqlite: a limited claim's reads search the version indexes", () => {
  it("the count of jobs in flight and the probe for waiting ones", () =>
    runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const t = yield* Effect.provide(Effect.gen(function*() {
        return yield* SqlTables
      }), layerSqlTables())
      const { anyPending, readLimitUsage } = makeProviderLimitStatements({ sql, t, clock: makeLeaseClock(sql, false) })
      // The plans' reads of the jobs table (`j` in the probe).
      const searches = (plan: ReadonlyArray<string>) => plan.filter((line) => /^(SEARCH|SCAN) (genjobs_jobs|j)\b/.test(line))

      const counted = yield* plansOf(readLimitUsage(versions, [], T0))
      expect(searches(counted), counted.join("\n")).toEqual([
        "SEARCH genjobs_jobs USING COVERING INDEX genjobs_jobs_processing_version (model=? AND version=?)",
        "SEARCH genjobs_jobs USING COVERING INDEX genjobs_jobs_processing_version (model=? AND version=?)"
      ])
      const probed = yield* plansOf(anyPending(versions))
      // The versions joined to that index: a search a version.
      expect(searches(probed), probed.join("\n")).toEqual([
        "SEARCH j EXISTS USING COVERING INDEX genjobs_jobs_pending_version (model=? AND version=?)"
      ])
    })))
})
