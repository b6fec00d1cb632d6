import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { makeReaperStatements } from "../../adapters/sql/queue/reaper.js"
import { postgresAvailable } from "../support/postgres.js"
import { T0 } from "./fixtures.js"
import { nodes, oneAccount, pgStatementContext, planOf, planRuntime, render } from "./pgPlans.js"
import { sentStatements } from "./sentStatement.js"

/**
 * The queue relay's pass (brokers only, every 5 s in one process) reads the leases that expired
 * longer ago than its grace as a range of the leases' index, from its start to the bound: not
 * every processing job. Written `lease_expires_at + grace <= now`, the bound was a filter on each
 * entry, and with 10,000 generations in flight, their leases all live, PostgreSQL read all
 * 10,000 entries to find none (1.4 ms over 211 buffers, against 0.02 ms over 2).
 * sqliteLeasePlans.test.ts checks SQLite's plan of the same read.
 */

const pgUp = await postgresAvailable()

/** The relay's two reads, as the store sends them, with the database's lease clock. */
const relayReads = () =>
  Effect.gen(function*() {
    const { queueGaps } = makeReaperStatements(yield* pgStatementContext)
    return yield* sentStatements(queueGaps({ now: T0, graceMs: 60_000, after: null, maxAttempts: 3, limit: 500 }))
  })

/** The read of expired leases among them. */
const expiredRead = (sent: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]>) => {
  const reads = sent.filter(([text]) => text.includes("lease_expires_at"))
  expect(reads).toHaveLength(1)
  return reads[0]!
}

if (!pgUp) {
  describe.skip("postgres: the queue relay's read of expired leases (server not reachable)", () => {
    it("ranges over the leases' index", () => undefined)
  })
} else {
  /** 10,000 generations in flight, their leases ten minutes ahead of the database's clock; ANALYZEd so. */
  const inFlight = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* oneAccount
    yield* sql`SET session_replication_role = replica`
    yield* sql`INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, status, cost_micro_cents,
        created_at, estimated_completion_at, attempts, fair_key, lease_owner, lease_expires_at)
      SELECT 'job_' || lpad(g::text, 6, '0'), 'acc_00001', 'req_' || g, 'm/x', 'v1', '{}', 'processing', 1000,
        ${T0}::bigint + g, ${T0}::bigint + g, 1, g, 'w', (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint + 600000 + g
      FROM generate_series(0, 9999) g`
    yield* sql`SET session_replication_role = DEFAULT`
    yield* sql`ANALYZE genjobs_jobs`
    yield* sql`ALTER TABLE genjobs_jobs SET (autovacuum_enabled = false)`
  })
  const runtime = planRuntime(inFlight)

  describe("postgres: the queue relay's read of expired leases", () => {
    it.each(["first", "settled"] as const)("ranges over the leases' index up to the grace's bound (%s plan)", (run) =>
      runtime.runPromise(Effect.gen(function*() {
        const statement = expiredRead(yield* relayReads())
        const plan = yield* planOf(statement, run)
        const where = `${run} plan of ${statement[0]}:\n${render(plan)}`
        const leases = nodes(plan).filter((n) => n["Index Name"] === "genjobs_jobs_lease_order")
        expect(leases, where).toHaveLength(1)
        expect(leases[0]!["Index Cond"], where).toMatch(/lease_expires_at <=/)
        expect(nodes(plan).some((n) => n["Node Type"] === "Seq Scan"), where).toBe(false)
      })))
  })
}
