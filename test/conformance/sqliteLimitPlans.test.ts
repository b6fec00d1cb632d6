import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeProviderLimitStatements } from "../../adapters/sql/queue/providerLimits.js"
import { T0 } from "./fixtures.js"
import { plansOf, sqlitePlanRuntime, sqliteStatementContext } from "./sqlitePlans.js"

/**
 * SQLite reads a limited claim's count of jobs in flight and its probe for waiting jobs from the
 * version indexes of processing and pending jobs, a search a version. SQLite keeps no statistics
 * here (the engine runs no ANALYZE), and with `(model, version) IN (VALUES ...)` both were read
 * from the status index: every processing, or pending, job of every version, each claim.
 */

const runtime = sqlitePlanRuntime("limit-plans")

const versions = [{ model: "limited/x", version: "v1" }, { model: "limited/y", version: "v1" }]

describe("sqlite: a limited claim's reads search the version indexes", () => {
  it("the count of jobs in flight and the probe for waiting ones", () =>
    runtime.runPromise(Effect.gen(function*() {
      const { anyPending, readLimitUsage } = makeProviderLimitStatements(yield* sqliteStatementContext)
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
