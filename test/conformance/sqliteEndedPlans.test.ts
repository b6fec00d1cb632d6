import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { makeHeldStatements } from "../../adapters/sql/queue/held.js"
import { makeSqlAdmin } from "../../adapters/sql/SqlAdmin.js"
import { makeSqlRetention } from "../../adapters/sql/SqlRetention.js"
import { layerSqlTables } from "../../adapters/sql/tables.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import { plansOf, sqlitePlanRuntime, sqliteStatementContext } from "./sqlitePlans.js"

/**
 * On SQLite the reads of ended and processing jobs find them by key or by their own index, not
 * by their status: an ending's changes-feed entries (read back by id after its UPDATE), the
 * retention sweeper's oldest ended jobs, the newest run times (a process's first queue place,
 * the admin stats) and the processing jobs counted per version (the queue's places). SQLite keeps
 * no statistics here (the engine runs no ANALYZE), and written plainly each of them read every
 * ended (or processing) job through the status index: the ending's entries once per ending, so
 * a drain beside 100,000 ended jobs ran at 60 % of its rate beside none (adapters/sql/indexedBy.ts,
 * adapters/sql/jobs/changes.ts).
 */

const runtime = sqlitePlanRuntime("ended-plans")

/** The plan's reads of the jobs table by an index other than its key, and its sorts. */
const indexReadsAndSorts = (plan: ReadonlyArray<string>) =>
  plan.filter((line) => (/^(SEARCH|SCAN) (genjobs_jobs|j)\b/.test(line) && !line.includes("(id=?)")) || line.includes("TEMP B-TREE"))

describe("sqlite: reads of ended and processing jobs go by key or by their own index", () => {
  it("an ending's changes-feed entries read its jobs back by id", () =>
    runtime.runPromise(Effect.gen(function*() {
      const jobs = yield* JobRepo
      const owner = yield* createAccount(100_000)
      const held = job(owner.id)
      yield* jobs.submit({ job: held, maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
      expect(Option.isSome(yield* jobs.claim({ workerId: "w1", now: T0, leaseMs: 60_000, maxAttempts: 3 }))).toBe(true)
      const { finishHeld } = makeHeldStatements(yield* sqliteStatementContext)
      const plan = yield* plansOf(finishHeld([{ id: held.id, leaseOwner: "w1", status: "completed", outputs: [], error: null, completedAt: T0 + 1 }]))
      // The UPDATE and the entries' INSERT were both sent: the job ended.
      expect(plan.filter((line) => line.includes("(id=?)")), plan.join("\n")).toHaveLength(2)
      expect(indexReadsAndSorts(plan), plan.join("\n")).toEqual([])
    })))

  it("the retention sweeper's oldest ended jobs, in the order of their end", () =>
    runtime.runPromise(Effect.gen(function*() {
      const retention = yield* Effect.provide(makeSqlRetention, layerSqlTables())
      const plan = yield* plansOf(retention.endedJobs({
        endedBy: T0,
        limit: 500,
        statuses: ["completed", "failed", "cancelled"],
        unsentDeliveries: ["pending"]
      }))
      expect(indexReadsAndSorts(plan), plan.join("\n")).toEqual(["SEARCH j USING INDEX genjobs_jobs_ended (completed_at<?)"])
    })))

  it("the newest run times, and the processing jobs counted per version", () =>
    runtime.runPromise(Effect.gen(function*() {
      const { reads: admin } = yield* Effect.provide(makeSqlAdmin, layerSqlTables())
      const stats = yield* plansOf(admin.stats({ from: T0, to: T0 + 1, limit: 1_000 }))
      expect(indexReadsAndSorts(stats).filter((line) => !line.includes("COVERING INDEX genjobs_jobs_status_list (status=?)")), stats.join("\n"))
        .toEqual(["SEARCH genjobs_jobs USING INDEX genjobs_jobs_ended (completed_at>? AND completed_at<?)"])
      const summary = yield* plansOf(admin.waitingSummary)
      expect(summary.filter((line) => line.includes("processing_version") || line.includes("GROUP BY")), summary.join("\n")).toEqual([
        // The waiting jobs' groups: every pending job, grouped (the queue's places read it at most a tenth of the time, QueueBook.ts).
        "USE TEMP B-TREE FOR GROUP BY",
        "SCAN genjobs_jobs USING COVERING INDEX genjobs_jobs_processing_version"
      ])
    })))
})
