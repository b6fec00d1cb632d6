import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { postgresAvailable } from "../support/postgres.js"
import { T0 } from "./fixtures.js"
import { nodes, oneAccount, type PlanNode, planRuntime, render } from "./pgPlans.js"
import { sentStatement } from "./sentStatement.js"

/**
 * A claim from the store's queue keeps its prepared plan while PostgreSQL's statistics count a
 * backlog. The engine's pool prepares every statement it runs twice, and PostgreSQL keeps a
 * prepared statement's generic plan from its sixth run only when that plan costs no more than
 * the plans made for each run's values. A bound `LIMIT $n` is costed in the generic plan for a
 * tenth of the rows the statistics expect, so with a backlog counted (an ANALYZE during one)
 * each claim was planned afresh: about 0.3 ms of the database's CPU a claim, a fifth of a claim
 * at a million pending (claim_cost). Plans are checked as they are reused, with their index
 * scans: the claim order's partial index, and the expired leases' one.
 */

const pgUp = await postgresAvailable()

const JOBS = 20_000

/** JOBS jobs of one account, one in ten pending, the rest completed; ANALYZEd so, autovacuum off. */
const backlogCounted = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* oneAccount
  yield* sql`INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, status, cost_micro_cents,
      created_at, estimated_completion_at, attempts, fair_key, completed_at)
    SELECT 'job_' || lpad(g::text, 6, '0'), 'acc_00001', 'req_' || g, 'm/' || (g % 4), 'v1', '{}',
      CASE WHEN g % 10 = 0 THEN 'pending' ELSE 'completed' END, 1000, ${T0}::bigint + g, ${T0}::bigint + g, 0, g,
      CASE WHEN g % 10 = 0 THEN NULL ELSE ${T0}::bigint + g END
    FROM generate_series(0, ${JOBS - 1}) g`
  yield* sql`ANALYZE genjobs_jobs`
  yield* sql`ALTER TABLE genjobs_jobs SET (autovacuum_enabled = false)`
})

/** A parameter as EXECUTE takes it, a SQL literal. */
const literal = (value: unknown) => typeof value === "number" ? String(value) : `'${String(value).replace(/'/g, "''")}'`

/**
 * The statement prepared and run `runs` times in a transaction rolled back: how many of its
 * runs used the generic plan, and the plan of one more run.
 */
const reuseOf = ([text, params]: readonly [string, ReadonlyArray<unknown>], runs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    let seen: { readonly generic: number; readonly plan: PlanNode } | undefined
    return sql.withTransaction(Effect.gen(function*() {
      const execute = `EXECUTE claim(${params.map(literal).join(", ")})`
      yield* sql.unsafe(`SET LOCAL plan_cache_mode = auto`)
      yield* sql.unsafe(`PREPARE claim AS ${text}`)
      for (let i = 0; i < runs; i++) yield* sql.unsafe(execute)
      const [counts] = yield* sql.unsafe<{ generic_plans: number | bigint }>(`SELECT generic_plans FROM pg_prepared_statements WHERE name = 'claim'`)
      const [explained] = yield* sql.unsafe<{ "QUERY PLAN": ReadonlyArray<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${execute}`)
      yield* sql.unsafe(`DEALLOCATE claim`)
      seen = { generic: Number(counts!.generic_plans), plan: explained!["QUERY PLAN"][0]!.Plan }
      // Rolled back: the claims' writes leave the seeded rows as they were for the next case.
      return yield* Effect.fail("rolled back" as const)
    })).pipe(Effect.catchIf((e) => e === "rolled back", () => Effect.void), Effect.map(() => seen!))
  })

/** The claim the store sends for `limit`, prepared and run 8 times: its runs on the generic plan, and its plan. */
const claimReused = (limit: number) =>
  Effect.gen(function*() {
    const jobs = yield* JobRepo
    const statement = yield* sentStatement(jobs.claimBatch({ workerId: "w1", now: T0, leaseMs: 60_000, maxAttempts: 3, limit }))
    const { generic, plan } = yield* reuseOf(statement, 8)
    return { generic, plan, where: `plan of ${statement[0]}:\n${render(plan)}` }
  })

/** Expired leases and pending jobs each read from their index in the claim's order, the rows by key: no sort. */
const expectInOrder = (plan: PlanNode, where: string) => {
  const scans = nodes(plan).filter((n) => n["Relation Name"] === "genjobs_jobs" && n["Node Type"] !== "ModifyTable")
  expect(scans.map((n) => `${n["Node Type"]} ${n["Index Name"]}`).sort(), where).toEqual([
    "Index Scan genjobs_jobs_lease_order",
    "Index Scan genjobs_jobs_pending",
    "Index Scan genjobs_jobs_pkey"
  ])
  expect(nodes(plan).some((n) => n["Node Type"] === "Sort"), where).toBe(false)
}

if (!pgUp) {
  describe.skip("postgres: a claim's plan (server not reachable)", () => {
    it("keeps its prepared plan", () => undefined)
  })
} else {
  const runtime = planRuntime(backlogCounted)

  describe("postgres: a claim keeps its prepared plan while the statistics count a backlog", () => {
    it.each([1, 24])("a claim of %i", (limit) =>
      runtime.runPromise(Effect.gen(function*() {
        const { generic, plan, where } = yield* claimReused(limit)
        // PostgreSQL makes a plan for each of the first five runs' values, then keeps the
        // generic one when it costs no more: the sixth, seventh and eighth runs.
        expect(generic, where).toBe(3)
        expectInOrder(plan, where)
      })))
  })

  /**
   * 20,000 ended jobs ANALYZEd, then a tenth made processing (leases ahead, or all expired) and a
   * tenth pending, not analyzed again: a burst of generations since autovacuum last looked. With
   * 0005's lease index (expiry alone, partial on the status) PostgreSQL read every processing job
   * from the status list's index and sorted them, for each claim.
   */
  const burstSinceAnalyze = (leasesFrom: "ahead" | "expired") =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* oneAccount
      yield* sql`INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, status, cost_micro_cents,
          created_at, estimated_completion_at, attempts, fair_key, completed_at)
        SELECT 'job_' || lpad(g::text, 6, '0'), 'acc_00001', 'req_' || g, 'm/' || (g % 4), 'v1', '{}', 'completed', 1000,
          ${T0}::bigint + g, ${T0}::bigint + g, 1, g, ${T0}::bigint + g
        FROM generate_series(0, ${JOBS - 1}) g`
      yield* sql`ANALYZE genjobs_jobs`
      yield* sql`ALTER TABLE genjobs_jobs SET (autovacuum_enabled = false)`
      const lease = leasesFrom === "ahead" ? T0 + 600_000 : T0 - 600_000
      yield* sql`UPDATE genjobs_jobs SET status = 'processing', completed_at = NULL, lease_owner = 'w',
          lease_expires_at = ${lease}::bigint + fair_key WHERE fair_key % 10 = 1`
      yield* sql`UPDATE genjobs_jobs SET status = 'pending', completed_at = NULL, attempts = 0 WHERE fair_key % 10 = 2`
    })

  for (const leasesFrom of ["ahead", "expired"] as const) {
    const stale = planRuntime(burstSinceAnalyze(leasesFrom))
    describe(`postgres: a claim reads leases in order whatever the statistics say (leases ${leasesFrom}, analyzed before)`, () => {
      it.each([1, 24])("a claim of %i", (limit) =>
        stale.runPromise(Effect.gen(function*() {
          const { plan, where } = yield* claimReused(limit)
          expectInOrder(plan, where)
        })))
    })
  }
}
