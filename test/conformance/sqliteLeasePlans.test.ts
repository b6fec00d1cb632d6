import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeFairKeys } from "../../adapters/sql/jobs/fairKey.js"
import { makeClaimStatements } from "../../adapters/sql/queue/claims.js"
import { makeHandOffFragments } from "../../adapters/sql/queue/handOff.js"
import { makeReaperStatements } from "../../adapters/sql/queue/reaper.js"
import { T0 } from "./fixtures.js"
import { plansOf, sqlitePlanRuntime, sqliteStatementContext } from "./sqlitePlans.js"

/**
 * On SQLite every read of leases by their expiry searches the leases' index: a claim's expired
 * leases, a hand-off's check that none is runnable (every submit to a server with idle local
 * workers), the reaper's exhausted leases and the queue relay's expired ones; and a claim's
 * pending jobs in claim order, and a submit's first pending key of all, come from the pending
 * jobs' index. SQLite keeps no statistics here (the engine runs no ANALYZE), and written plainly
 * each of them read every processing (or pending) job through the status index: with 10,000
 * generations in flight, 1.3 ms for a hand-off's check against 0.03 ms; beside a backlog of
 * 100,000, 25.6 ms for a claim's sort of every pending job against 0.03 ms
 * (adapters/sql/queue/claims.ts, `leasedJobs` and `pendingJobs`).
 */

const runtime = sqlitePlanRuntime("lease-plans")

const lease = { leaseOwner: "w1", now: T0, leaseExpiresAt: T0 + 60_000, maxAttempts: 3 }

/** The plan's reads of the jobs table by an index other than its key. */
const indexReads = (plan: ReadonlyArray<string>) => plan.filter((line) => /^(SEARCH|SCAN) genjobs_jobs\b/.test(line) && !line.includes("(id=?)"))

describe("sqlite: reads of leases by their expiry, and a claim's of pending jobs, search their own indexes", () => {
  it("a claim's expired leases, then its pending jobs in claim order", () =>
    runtime.runPromise(Effect.gen(function*() {
      const { claimBatch } = makeClaimStatements(yield* sqliteStatementContext)
      const plan = yield* plansOf(claimBatch({ ...lease, limit: 24, exclude: [] }))
      expect(indexReads(plan), plan.join("\n")).toEqual([
        "SEARCH genjobs_jobs USING INDEX genjobs_jobs_leases (lease_expires_at<?)",
        "SCAN genjobs_jobs USING COVERING INDEX genjobs_jobs_pending"
      ])
    })))

  it("a hand-off's check that no job is runnable", () =>
    runtime.runPromise(Effect.gen(function*() {
      const ctx = yield* sqliteStatementContext
      const { anyRunnable } = makeHandOffFragments(ctx)
      const plan = yield* plansOf(ctx.sql`SELECT ${anyRunnable(lease)} AS found`)
      expect(indexReads(plan), plan.join("\n")).toEqual([
        // Whether one job is pending: the first entry of the status index answers it.
        "SEARCH genjobs_jobs USING COVERING INDEX genjobs_jobs_status_list (status=?)",
        "SEARCH genjobs_jobs USING INDEX genjobs_jobs_leases (lease_expires_at<?)"
      ])
    })))

  it("a submit's fair key, the first pending key of all for an account with none waiting", () =>
    runtime.runPromise(Effect.gen(function*() {
      const ctx = yield* sqliteStatementContext
      const { fairKey } = makeFairKeys(ctx)
      const plan = yield* plansOf(ctx.sql`SELECT ${fairKey("acc_1")} AS fair_key`)
      expect(indexReads(plan), plan.join("\n")).toEqual([
        "SEARCH genjobs_jobs USING COVERING INDEX genjobs_jobs_pending_account (account_id=?)",
        "SCAN genjobs_jobs USING COVERING INDEX genjobs_jobs_pending"
      ])
    })))

  it("the reaper's exhausted leases and the queue relay's expired ones", () =>
    runtime.runPromise(Effect.gen(function*() {
      const { findExhausted, queueGaps } = makeReaperStatements(yield* sqliteStatementContext)
      const exhausted = yield* plansOf(findExhausted(T0, 3, 100))
      expect(indexReads(exhausted), exhausted.join("\n")).toEqual(["SEARCH genjobs_jobs USING INDEX genjobs_jobs_leases (lease_expires_at<?)"])
      const gaps = yield* plansOf(queueGaps({ now: T0, graceMs: 60_000, after: null, maxAttempts: 3, limit: 500 }))
      expect(indexReads(gaps).filter((line) => line.includes("lease")), gaps.join("\n")).toEqual([
        "SEARCH genjobs_jobs USING INDEX genjobs_jobs_leases (lease_expires_at<?)"
      ])
    })))
})
