import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { makeProviderLimitStatements } from "../../adapters/sql/queue/providerLimits.js"
import { postgresAvailable } from "../support/postgres.js"
import { T0 } from "./fixtures.js"
import { nodes, oneAccount, pgStatementContext, planOf, planRuntime, render } from "./pgPlans.js"
import { sentStatement } from "./sentStatement.js"

/**
 * A limited claim counts the jobs in flight of the limited versions from their own entries in
 * the partial index of processing jobs by version (migration 0022), under the limits' lock. Before
 * it, the count read every processing job through the leases' index, or every job the limited
 * model ever had: with many generations of other providers in flight, milliseconds a claim.
 * sqliteLimitPlans.test.ts checks SQLite's plans of the limited claim's reads.
 */

const pgUp = await postgresAvailable()

/** Jobs of one account, `n` of a model and status each, one after the other. */
type Seed = ReadonlyArray<readonly [n: number, model: string, status: string]>

/**
 * The account and `seed`'s jobs (the count triggers off, as the rows are written by hand), then
 * ANALYZEd so, autovacuum off.
 */
const seeded = (seed: Seed) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* oneAccount
    yield* sql`SET session_replication_role = replica`
    let from = 0
    for (const [n, model, status] of seed) {
      yield* sql`INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, status, cost_micro_cents,
          created_at, estimated_completion_at, attempts, fair_key, completed_at, lease_expires_at)
        SELECT 'job_' || lpad(g::text, 6, '0'), 'acc_00001', 'req_' || g, ${model}, 'v1', '{}', ${status}, 1000,
          ${T0}::bigint + g, ${T0}::bigint + g, 0, g,
          CASE WHEN ${status} = 'completed' THEN ${T0}::bigint + g END,
          CASE WHEN ${status} = 'processing' THEN ${T0}::bigint + 600000 END
        FROM generate_series(${from}::int, ${from + n - 1}::int) g`
      from += n
    }
    yield* sql`SET session_replication_role = DEFAULT`
    yield* sql`ANALYZE genjobs_jobs`
    yield* sql`ALTER TABLE genjobs_jobs SET (autovacuum_enabled = false)`
  })

/** 10,000 generations of another provider in flight; of the limited model, 20 in flight, 200 pending and 5,000 ended. */
const manyInFlight = seeded([
  [10_000, "other/x", "processing"],
  [20, "limited/x", "processing"],
  [200, "limited/x", "pending"],
  [5_000, "limited/x", "completed"]
])

/**
 * A limited model with most of the table's rows (20,000 ended) and none waiting, beside 5,000
 * waiting jobs of another model: where a probe for the limited model's waiting jobs that the
 * planner expects to end at its first row may read the whole backlog instead.
 */
const limitedModelMostRows = seeded([
  [20_000, "limited/x", "completed"],
  [20, "limited/x", "processing"],
  [5_000, "other/x", "pending"],
  [1_000, "other/x", "processing"]
])

/** The limited claim's statements (adapters/sql/queue/providerLimits.ts) on the store's client and tables. */
const limitStatements = Effect.map(pgStatementContext, makeProviderLimitStatements)

if (!pgUp) {
  describe.skip("postgres: a limited claim's count (server not reachable)", () => {
    it("reads the limited versions' jobs in flight only", () => undefined)
  })
} else {
  const runtime = planRuntime(manyInFlight)

  describe("postgres: a limited claim counts its versions' jobs in flight from their own index entries", () => {
    it.each(["first", "settled"] as const)("the %s plan", (run) =>
      runtime.runPromise(Effect.gen(function*() {
        const { readLimitUsage } = yield* limitStatements
        const statement = yield* sentStatement(readLimitUsage([{ model: "limited/x", version: "v1" }], [], T0))
        const plan = yield* planOf(statement, run)
        const where = `plan of ${statement[0]}:\n${render(plan)}`
        // An index scan, or a bitmap of one, of that index alone; no other way into the jobs.
        expect(nodes(plan).flatMap((n) => (n["Index Name"] === undefined ? [] : [n["Index Name"]])), where).toEqual(["genjobs_jobs_processing_version"])
        expect(nodes(plan).some((n) => n["Node Type"] === "Seq Scan"), where).toBe(false)
      })))
  })

  const mostRows = planRuntime(limitedModelMostRows)

  describe("postgres: a limited claim's probe for waiting jobs reads the version index", () => {
    it.each(["first", "settled"] as const)("the %s plan", (run) =>
      mostRows.runPromise(Effect.gen(function*() {
        const { anyPending } = yield* limitStatements
        const statement = yield* sentStatement(anyPending([{ model: "limited/x", version: "v1" }, { model: "limited/y", version: "v1" }]))
        const plan = yield* planOf(statement, run)
        const where = `plan of ${statement[0]}:\n${render(plan)}`
        // The versions joined to that index, a probe a version (a nested loop over them).
        expect(nodes(plan).flatMap((n) => (n["Index Name"] === undefined ? [] : [n["Index Name"]])), where).toEqual([
          "genjobs_jobs_pending_version"
        ])
        expect(nodes(plan).some((n) => n["Node Type"] === "Seq Scan"), where).toBe(false)
      })))
  })
}
