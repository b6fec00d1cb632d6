import { describe, expect, it } from "vitest"
import { runTimesByModel } from "../../src/domain/stats.js"

describe("run-time percentiles per model", () => {
  it("takes the nearest rank: a time some job really took", () => {
    const runs = Array.from({ length: 20 }, (_, i) => ({ model: "m/a", runMs: (20 - i) * 100 }))
    // 100..2000 ms: the 10th of 20 is the median, the 19th the 95th percentile.
    expect(runTimesByModel(runs)).toEqual([{ model: "m/a", jobs: 20, p50Ms: 1000, p95Ms: 1900 }])
  })

  it("groups by model, in name order; one run is its own p50 and p95", () => {
    const runs = [
      { model: "z/late", runMs: 7 },
      { model: "a/early", runMs: 30 },
      { model: "a/early", runMs: 10 },
      { model: "a/early", runMs: 20 }
    ]
    expect(runTimesByModel(runs)).toEqual([
      { model: "a/early", jobs: 3, p50Ms: 20, p95Ms: 30 },
      { model: "z/late", jobs: 1, p50Ms: 7, p95Ms: 7 }
    ])
  })

  it("no runs, no models", () => {
    expect(runTimesByModel([])).toEqual([])
  })
})
