import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { JobId } from "../../src/domain/ids.js"
import { retainedStatuses, unsentDeliveries } from "../../src/domain/retention.js"
import { RetentionRepo } from "../../src/ports/RetentionRepo.js"
import { postgresAvailable } from "../support/postgres.js"
import { T0 } from "./fixtures.js"
import { nodes, oneAccount, planOf, planRuntime, render } from "./pgPlans.js"
import { sentStatements } from "./sentStatement.js"

/**
 * A retention batch on PostgreSQL finds each listed job by its primary key, whatever the
 * statistics say (adapters/sql/queue/statusFilter.ts), and the sweep reads a batch's ids from the
 * ended jobs' index. The statistics here are taken while no job had ended, and every job has
 * ended since, as on a fresh system after a burst until autovacuum analyzes again: a plan that
 * trusted them would read the ended jobs from a status index and check each against the list,
 * every ended job for every batch of the sweep.
 */

const pgUp = await postgresAvailable()

const JOBS = 5_000
const jobId = (g: number) => `job_${String(g).padStart(6, "0")}` as JobId
/** A sweep's batch (retentionBatchSize's default), every 50th job. */
const BATCH = Array.from({ length: 100 }, (_, i) => jobId(i * 50 + 3))

/** JOBS pending jobs, every other with a webhook delivery to send, ANALYZEd so (autovacuum off); then every one ended and its webhook sent. */
const ended = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* oneAccount
  yield* sql`INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, status, cost_micro_cents,
      created_at, estimated_completion_at, attempts)
    SELECT 'job_' || lpad(g::text, 6, '0'), 'acc_00001', 'req_' || g, 'm/' || (g % 4), 'v1', '{}', 'pending', 1000,
      ${T0}::bigint + g, ${T0}::bigint + g, 0
    FROM generate_series(0, ${JOBS - 1}) g`
  yield* sql`INSERT INTO genjobs_webhook_deliveries (id, job_id, account_id, url, payload, status, attempts, created_at)
    SELECT 'whd_' || lpad(g::text, 6, '0'), 'job_' || lpad(g::text, 6, '0'), 'acc_00001', 'http://127.0.0.1:9/hook', '{}',
      'pending', '[]', ${T0}::bigint + g
    FROM generate_series(1, ${JOBS - 1}, 2) g`
  yield* sql`ANALYZE genjobs_jobs, genjobs_webhook_deliveries`
  yield* sql`ALTER TABLE genjobs_jobs SET (autovacuum_enabled = false)`
  yield* sql`ALTER TABLE genjobs_webhook_deliveries SET (autovacuum_enabled = false)`
  yield* sql`UPDATE genjobs_jobs SET status = (ARRAY['completed', 'failed', 'cancelled'])[1 + substr(id, 5)::int % 3],
      attempts = 1, started_at = created_at, completed_at = created_at + 1000`
  yield* sql`UPDATE genjobs_webhook_deliveries SET status = 'sent'`
})

if (!pgUp) {
  describe.skip("postgres: retention plans (server not reachable)", () => {
    it("finds each listed job by id", () => undefined)
  })
} else {
  const runtime = planRuntime(ended)

  describe("postgres: retention's plans, with statistics from before the jobs ended", () => {
    it("a batch's removal finds each listed job by its primary key", () =>
      runtime.runPromise(Effect.gen(function*() {
        const retention = yield* RetentionRepo
        // The batch is removed as it is caught: the plans below depend on the statistics, not on the rows.
        const sent = yield* sentStatements(retention.removeJobs({ statuses: retainedStatuses, unsentDeliveries, jobIds: BATCH }))
        let readingJobs = 0
        for (const statement of sent) {
          for (const when of ["first", "settled"] as const) {
            const plan = yield* planOf(statement, when)
            const reads = nodes(plan).filter((n) => n["Relation Name"] === "genjobs_jobs" && n["Node Type"] !== "ModifyTable")
            const where = `${when} plan of ${statement[0]}:\n${render(plan)}`
            if (when === "first" && reads.length > 0) readingJobs++
            for (const read of reads) {
              expect(read["Node Type"], where).toBe("Index Scan")
              expect(read["Index Name"], where).toBe("genjobs_jobs_pkey")
            }
          }
        }
        // The deliveries' DELETE and the jobs' (the third removes the jobs' log lines).
        expect(readingJobs).toBe(2)
      })))

    it("a batch's ids are read from the ended jobs' index, in their end's order", () =>
      runtime.runPromise(Effect.gen(function*() {
        const retention = yield* RetentionRepo
        const [statement] = yield* sentStatements(
          retention.endedJobs({ endedBy: T0 + 10_000_000, limit: 100, statuses: retainedStatuses, unsentDeliveries })
        )
        for (const when of ["first", "settled"] as const) {
          const plan = yield* planOf(statement!, when)
          const reads = nodes(plan).filter((n) => n["Relation Name"] === "genjobs_jobs")
          const where = `${when} plan:\n${render(plan)}`
          expect(reads, where).toHaveLength(1)
          expect(reads[0]!["Node Type"], where).toBe("Index Scan")
          expect(reads[0]!["Index Name"], where).toBe("genjobs_jobs_ended")
        }
      })))
  })
}
