import { Effect, Layer } from "effect"
import { it as effectIt } from "@effect/vitest"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import { emptyLogMark } from "../../src/domain/providerLogs.js"
import { JobId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { JobLogRepo, type ProviderReport } from "../../src/ports/JobLogRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { makeProviderReports, REPORT_LINGER_MS, type ReportMarks } from "../../src/services/watch/providerReports.js"

const provider = { logSecrets: [] } as unknown as GenerationProvider
const marks = (): ReportMarks => ({ progress: undefined, log: emptyLogMark, echo: false, writing: false, later: undefined, then: undefined })

/** A store that records each statement's reports, and a JobEvents that records each publish. */
const recording = () => {
  const statements: Array<ReadonlyArray<ProviderReport>> = []
  const published: Array<ReadonlyArray<JobId>> = []
  const layer = Layer.mergeAll(
    Layer.succeed(JobLogRepo, {
      record: (reports) => Effect.sync(() => (statements.push(reports), reports.map((r) => r.id))),
      lines: () => Effect.succeed([])
    }),
    Layer.succeed(JobEvents, {
      publish: (jobIds) => Effect.sync(() => void published.push(jobIds)),
      // Reports are hinted to every follower (provider progress), never only-if-followed.
      publishIfFollowed: () => Effect.die("provider reports publish to every follower"),
      publishAll: Effect.void,
      follow: () => () => {},
      subscribe: () => Effect.void,
      subscribeAll: () => Effect.void
    })
  )
  return { statements, published, layer }
}

describe("provider reports", () => {
  it("writes the reports of generations polled moments apart in one statement and one publish, then ends the generation", async () => {
    const { layer, published, statements } = recording()
    const ended: Array<string> = []
    await Effect.gen(function*() {
      const reports = yield* makeProviderReports
      const all = Array.from({ length: 20 }, (_, i) => ({ id: JobId.make(`job_${i}`), marks: marks() }))
      for (const { id, marks } of all) {
        reports.write(marks, { jobId: id, workerId: "wrk_1", provider }, { _tag: "Running", progress: 40, logs: ["a line"] }, 1)
        // A poll answered between reports: the writer must not have taken the first ones alone.
        yield* Effect.yieldNow
      }
      // The generation's end waits for its report.
      const { marks: first } = all[0]!
      expect(first.writing).toBe(true)
      reports.afterReport(first, () => ended.push(`job_0 after ${statements.length} statement`))
      yield* Effect.sleep(500)
      expect(first).toMatchObject({ progress: 40, writing: false })
    }).pipe(Effect.scoped, Effect.provide(layer), Effect.runPromise)
    expect(statements.map((s) => s.length)).toEqual([20])
    expect(published.map((p) => p.length)).toEqual([20])
    expect(ended).toEqual(["job_0 after 1 statement"])
  })

  it("writes at most 100 reports to a statement: the rest go in the next", async () => {
    const { layer, statements } = recording()
    await Effect.gen(function*() {
      const reports = yield* makeProviderReports
      for (let i = 0; i < 150; i++) {
        reports.write(marks(), { jobId: JobId.make(`job_${i}`), workerId: "wrk_1", provider }, { _tag: "Running", progress: 10 }, 1)
      }
      yield* Effect.sleep(500)
    }).pipe(Effect.scoped, Effect.provide(layer), Effect.runPromise)
    expect(statements.map((s) => s.length)).toEqual([100, 50])
  })

  effectIt.effect("writes a report a generation's end waits for without lingering for others", () =>
    Effect.gen(function*() {
      const { layer, statements } = recording()
      const ended: Array<string> = []
      yield* Effect.gen(function*() {
        const reports = yield* makeProviderReports
        const first = marks()
        reports.write(first, { jobId: JobId.make("job_0"), workerId: "wrk_1", provider }, { _tag: "Running", progress: 90 }, 1)
        yield* Effect.yieldNow
        reports.afterReport(first, () => ended.push("job_0"))
        // The test clock stands still: only a write that does not linger ends the generation.
        for (let i = 0; i < 10 && ended.length === 0; i++) yield* Effect.yieldNow
        expect(statements.map((s) => s.length)).toEqual([1])
        expect(ended).toEqual(["job_0"])
        // A report no end waits for lingers again.
        reports.write(marks(), { jobId: JobId.make("job_1"), workerId: "wrk_1", provider }, { _tag: "Running", progress: 10 }, 1)
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow
        expect(statements.length).toBe(1)
        yield* TestClock.adjust(REPORT_LINGER_MS)
        for (let i = 0; i < 10 && statements.length === 1; i++) yield* Effect.yieldNow
        expect(statements.map((s) => s.length)).toEqual([1, 1])
      }).pipe(Effect.scoped, Effect.provide(layer))
    }))
})
