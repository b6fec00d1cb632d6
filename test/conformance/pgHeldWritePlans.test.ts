import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { JobId } from "../../src/domain/ids.js"
import { JobLogRepo } from "../../src/ports/JobLogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { postgresAvailable } from "../support/postgres.js"
import { T0 } from "./fixtures.js"
import { nodes, oneAccount, planOf, planRuntime, render } from "./pgPlans.js"
import { sentStatement } from "./sentStatement.js"

/**
 * The writes of held jobs on PostgreSQL (a lease renewal, a batch of provider reports) find each
 * job by its primary key, whatever the statistics say: that is what makes them lock their rows in
 * their list's order, by id, so two of them running at once never take two rows in opposite
 * orders and deadlock (adapters/sql/queue/lockOrder.ts). The statistics here are taken while
 * every job was pending and the jobs are then all processing, as on a worker that claimed a
 * backlog: a plan that trusted them would read every processing job from a status index (in that
 * index's order) and hash the list against them. At 10,000 generations in flight the reports'
 * statement did, and deadlocked with the renewals four times in a row. A claim of given jobs (a
 * broker's deliveries) finds them by primary key too, with statistics from a time few jobs were
 * pending: otherwise it read the whole backlog from a pending index for each claim.
 */

const pgUp = await postgresAvailable()

const JOBS = 5_000
const WORKER = "w1"
const jobId = (g: number) => `job_${String(g).padStart(6, "0")}` as JobId
/** Every 100th job, out of order: the store sorts its list by id. */
const HELD = Array.from({ length: 40 }, (_, i) => jobId(((i * 37) % 40) * 100 + 7))

/** The account and JOBS jobs in `status`, ANALYZEd so, autovacuum off: the statistics stay those of that moment. */
const jobsAnalyzedAs = (status: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* oneAccount
    yield* sql`INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, status, cost_micro_cents,
        created_at, estimated_completion_at, attempts, completed_at)
      SELECT 'job_' || lpad(g::text, 6, '0'), 'acc_00001', 'req_' || g, 'm/' || (g % 4), 'v1', '{}', ${status}, 1000,
        ${T0}::bigint + g, ${T0}::bigint + g, 0, CASE WHEN ${status} = 'completed' THEN ${T0}::bigint + g END
      FROM generate_series(0, ${JOBS - 1}) g`
    yield* sql`ANALYZE genjobs_jobs`
    yield* sql`ALTER TABLE genjobs_jobs SET (autovacuum_enabled = false)`
    return sql
  })

/** Every job claimed (held by WORKER) while the statistics still say pending. */
const held = Effect.gen(function*() {
  const sql = yield* jobsAnalyzedAs("pending")
  yield* sql`UPDATE genjobs_jobs SET status = 'processing', attempts = 1, lease_owner = ${WORKER},
      lease_expires_at = ${T0}::bigint + 60000 + (random() * 10000)::bigint, started_at = ${T0}, provider_phase = 'running'`
})

/** A backlog the statistics do not know: taken while every job had ended, then every one pending again (an idle queue that just got a burst). */
const backlog = Effect.gen(function*() {
  const sql = yield* jobsAnalyzedAs("completed")
  yield* sql`UPDATE genjobs_jobs SET status = 'pending', completed_at = NULL`
})

/** Every read of the jobs table in the plans of what `run` sends is the primary key's. */
const expectFoundById = <E, R>(run: Effect.Effect<unknown, E, R>) =>
  Effect.gen(function*() {
    const statement = yield* sentStatement(run)
    for (const when of ["first", "settled"] as const) {
      const plan = yield* planOf(statement, when)
      const reads = nodes(plan).filter((n) => n["Relation Name"] === "genjobs_jobs" && n["Node Type"] !== "ModifyTable")
      const where = `${when} plan of ${statement[0]}:\n${render(plan)}`
      expect(reads.length, where).toBeGreaterThan(0)
      for (const read of reads) {
        expect(read["Node Type"], where).toBe("Index Scan")
        expect(read["Index Name"], where).toBe("genjobs_jobs_pkey")
      }
    }
  })

if (!pgUp) {
  describe.skip("postgres: held jobs' write plans (server not reachable)", () => {
    it("finds each held job by id", () => undefined)
  })
} else {
  const runtime = planRuntime(held)
  const backlogRuntime = planRuntime(backlog)

  describe("postgres: the writes of held jobs find each job by its primary key", () => {
    it("a lease renewal", () =>
      runtime.runPromise(Effect.gen(function*() {
        const jobs = yield* JobRepo
        yield* expectFoundById(jobs.renewLeases(HELD.map((id) => ({ id, workerId: WORKER })), T0, 60_000))
      })))

    it("a batch of provider reports", () =>
      runtime.runPromise(Effect.gen(function*() {
        const logs = yield* JobLogRepo
        yield* expectFoundById(logs.record(HELD.map((id, i) => ({ id, leaseOwner: WORKER, progress: i % 100 }))))
      })))
  })

  // A broker's deliveries are claimed by id: read through a pending index, each claim of a few
  // jobs would read the whole backlog.
  describe("postgres: a claim of delivered jobs finds each by its primary key", () => {
    it("with statistics that say few jobs are pending", () =>
      backlogRuntime.runPromise(Effect.gen(function*() {
        const jobs = yield* JobRepo
        yield* expectFoundById(jobs.claimIds(HELD, { workerId: WORKER, now: T0, leaseMs: 60_000, maxAttempts: 3 }))
      })))
  })
}
