import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"

describe("GET /admin/stats", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("answers the jobs waiting now and the run times of the jobs completed, per model", async () => {
    const acc = await engine.account({ credits: 1_000_000 })
    for (const prompt of ["one", "two", "three"]) expect((await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt } })).status).toBe(200)
    const waiting = await engine.admin("GET", "/admin/stats")
    expect(waiting.status).toBe(200)
    expect(waiting.body).toMatchObject({ pendingJobs: 3, processingJobs: 0, runTimes: [] })
    expect(Date.parse(waiting.body.to) - Date.parse(waiting.body.from)).toBe(86_400_000)

    await engine.work()
    const ran = await engine.admin("GET", "/admin/stats")
    expect(ran.body).toMatchObject({ pendingJobs: 2, processingJobs: 0 })
    expect(ran.body.runTimes).toEqual([{ model: TEXT, jobs: 1, p50Ms: expect.any(Number), p95Ms: expect.any(Number) }])
    expect(ran.body.runTimes[0].p50Ms).toBe(ran.body.runTimes[0].p95Ms)
    // A range that ended before the job did holds no run.
    const before = await engine.admin("GET", `/admin/stats?from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z`)
    expect(before.body).toMatchObject({ pendingJobs: 2, runTimes: [], from: "2020-01-01T00:00:00.000Z", to: "2020-01-02T00:00:00.000Z" })
  })

  it("refuses a time that is not ISO 8601, an empty range or one over 366 days", async () => {
    for (const query of ["from=yesterday", "from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from=2024-01-01T00:00:00Z&to=2026-01-01T00:00:00Z"]) {
      const refused = await engine.admin("GET", `/admin/stats?${query}`)
      expect([refused.status, refused.body.error.code], query).toEqual([400, "VALIDATION_ERROR"])
    }
  })
})
