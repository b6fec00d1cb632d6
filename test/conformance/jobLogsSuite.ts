import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { retainedStatuses, unsentDeliveries } from "../../src/domain/retention.js"
import { emptyLogMark, MAX_LOG_LINES, planLogAppend } from "../../src/domain/providerLogs.js"
import { JobLogRepo } from "../../src/ports/JobLogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { RetentionRepo } from "../../src/ports/RetentionRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import type { Stores } from "./storeSuite.js"

/** Provider progress and log lines (issue 38) as every store must keep them. */
export const runJobLogsConformance = (name: string, makeLayer: () => Layer.Layer<Stores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, Stores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  /** `count` jobs of one account, claimed by worker "w". */
  const running = (count: number) =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const owner = yield* createAccount(1_000_000)
      const made = Array.from({ length: count }, (_, i) => job(owner.id, { createdAt: T0 + i }))
      for (const j of made) yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
      yield* repo.claimBatch({ workerId: "w", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3, limit: count })
      return made.map((j) => j.id)
    })

  describe(`${name}: JobLogRepo`, () => {
    test("appends lines and raises progress for the lease holder only; progress never moves backwards", () =>
      Effect.gen(function*() {
        const logs = yield* JobLogRepo
        const repo = yield* JobRepo
        const [a, b] = yield* running(2)
        const first = planLogAppend(emptyLogMark, ["one", "two"], [], T0 + 20)!
        expect(yield* logs.record([
          { id: a!, leaseOwner: "w", progress: 40, log: first },
          { id: b!, leaseOwner: "other", progress: 90, log: first }
        ])).toEqual([a])
        const stored = Option.getOrThrow(yield* repo.get(a!))
        expect(stored).toMatchObject({ providerProgress: 40, providerLog: { taken: 2, lines: 2, bytes: 6, capped: false } })
        const untouched = Option.getOrThrow(yield* repo.get(b!))
        expect(untouched.providerProgress).toBeUndefined()
        expect(untouched.providerLog).toBeUndefined()
        expect(yield* logs.lines(b!, 0, 10)).toEqual([])

        // A lower progress is not written; the log goes on numbering.
        const second = planLogAppend(first.mark, ["one", "two", "three"], [], T0 + 30)!
        expect(yield* logs.record([{ id: a!, leaseOwner: "w", progress: 10, log: second }])).toEqual([a])
        expect(Option.getOrThrow(yield* repo.get(a!))).toMatchObject({ providerProgress: 40, providerLog: second.mark })
        expect(yield* logs.record([{ id: a!, leaseOwner: "w", progress: 55 }])).toEqual([a])
        expect(Option.getOrThrow(yield* repo.get(a!))).toMatchObject({ providerProgress: 55, providerLog: second.mark })
        expect(yield* logs.lines(a!, 0, 10)).toEqual([
          { seq: 1, at: T0 + 20, line: "one" },
          { seq: 2, at: T0 + 20, line: "two" },
          { seq: 3, at: T0 + 30, line: "three" }
        ])
        // The same report again (a retried write) keeps each place once.
        yield* logs.record([{ id: a!, leaseOwner: "w", log: second }])
        expect((yield* logs.lines(a!, 0, 10)).map((l) => l.seq)).toEqual([1, 2, 3])

        // An ended job takes nothing more, and reads as written.
        const done = Option.getOrThrow(yield* repo.complete(a!, "w", [], T0 + 40))
        expect(done).toMatchObject({ providerProgress: 55, providerLog: second.mark })
        expect(Option.getOrThrow(yield* repo.get(a!))).toEqual(done)
        expect(yield* logs.record([{ id: a!, leaseOwner: "w", progress: 99 }])).toEqual([])
        expect(yield* logs.record([])).toEqual([])
      }))

    test("answers the jobs written, whatever the batch: all written, some refused, one job twice", () =>
      Effect.gen(function*() {
        const logs = yield* JobLogRepo
        const [a, b, c] = yield* running(3)
        const plan = planLogAppend(emptyLogMark, ["one"], [], T0 + 20)!
        const all = yield* logs.record([
          { id: a!, leaseOwner: "w", progress: 10, log: plan },
          { id: b!, leaseOwner: "w", progress: 10 },
          { id: c!, leaseOwner: "w", log: plan }
        ])
        expect([...all].sort()).toEqual([a, b, c].sort())
        const some = yield* logs.record([
          { id: a!, leaseOwner: "other", progress: 20 },
          { id: b!, leaseOwner: "w", progress: 20 },
          { id: c!, leaseOwner: "other", progress: 20 }
        ])
        expect(some).toEqual([b])
        const twice = yield* logs.record([
          { id: a!, leaseOwner: "w", progress: 30 },
          { id: a!, leaseOwner: "w", progress: 30 }
        ])
        // A store may name the job once or once per report: either way it was written.
        expect(new Set(twice)).toEqual(new Set([a]))
        expect(Option.getOrThrow(yield* (yield* JobRepo).get(a!)).providerProgress).toBe(30)
        expect(yield* logs.lines(c!, 0, 10)).toEqual([{ seq: 1, at: T0 + 20, line: "one" }])
      }))

    test("pages lines in order after a place, answering one more than the limit", () =>
      Effect.gen(function*() {
        const logs = yield* JobLogRepo
        const [a] = yield* running(1)
        const lines = Array.from({ length: 25 }, (_, i) => `line ${i + 1}`)
        yield* logs.record([{ id: a!, leaseOwner: "w", log: planLogAppend(emptyLogMark, lines, [], T0)! }])
        expect((yield* logs.lines(a!, 0, 10)).map((l) => l.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
        expect((yield* logs.lines(a!, 20, 10)).map((l) => l.line)).toEqual(["line 21", "line 22", "line 23", "line 24", "line 25"])
        expect(yield* logs.lines(a!, 25, 10)).toEqual([])
      }))

    test("keeps a capped log whole: the cap's marker last, nothing after it", () =>
      Effect.gen(function*() {
        const logs = yield* JobLogRepo
        const repo = yield* JobRepo
        const [a] = yield* running(1)
        const reported = Array.from({ length: MAX_LOG_LINES + 50 }, (_, i) => `step ${i}`)
        const plan = planLogAppend(emptyLogMark, reported, [], T0)!
        yield* logs.record([{ id: a!, leaseOwner: "w", log: plan }])
        expect(planLogAppend(plan.mark, [...reported, "later"], [], T0 + 1)).toBeUndefined()
        const stored = Option.getOrThrow(yield* repo.get(a!)).providerLog!
        expect(stored).toMatchObject({ lines: MAX_LOG_LINES, capped: true })
        const last = yield* logs.lines(a!, MAX_LOG_LINES - 2, 10)
        expect(last.map((l) => l.seq)).toEqual([MAX_LOG_LINES - 1, MAX_LOG_LINES])
        expect(last[1]!.line).toMatch(/log cap reached/)
      }))

    test("removes a job's lines with the job", () =>
      Effect.gen(function*() {
        const logs = yield* JobLogRepo
        const repo = yield* JobRepo
        const retention = yield* RetentionRepo
        const [gone, kept] = yield* running(2)
        for (const id of [gone!, kept!]) {
          yield* logs.record([{ id, leaseOwner: "w", log: planLogAppend(emptyLogMark, ["a", "b"], [], T0)! }])
          yield* repo.complete(id, "w", [], T0 + 100)
        }
        expect(yield* retention.removeJobs({ statuses: retainedStatuses, unsentDeliveries, jobIds: [gone!] })).toEqual({ jobs: 1, deliveries: 0 })
        expect(yield* logs.lines(gone!, 0, 10)).toEqual([])
        expect((yield* logs.lines(kept!, 0, 10)).map((l) => l.line)).toEqual(["a", "b"])
      }))
  })
}
