import { Effect, Metric } from "effect"
import { describe, expect, it } from "vitest"
import { jobsFinished, jobsSubmitted } from "../../src/observability/metrics.js"
import { jobsFinishedOf, jobsSubmittedOf } from "../../src/observability/metricSeries.js"

const run = <A>(effect: Effect.Effect<A>) => Effect.runSync(effect)

describe("labelled metric series", () => {
  it("counts into the series a user reads with Metric.withAttributes on the public metric", () => {
    const model = `series-test-${Math.random()}`
    run(Metric.update(jobsSubmittedOf(model), 1))
    run(Metric.update(jobsSubmittedOf(model), 1))
    expect(run(Metric.value(Metric.withAttributes(jobsSubmitted, { model }))).count).toBe(2)
  })

  it("addresses one series with two labels, whatever their order", () => {
    const model = `series-test-${Math.random()}`
    run(Metric.update(jobsFinishedOf(model, "failed"), 1))
    const tagged = Metric.withAttributes(jobsFinished, { outcome: "failed", model })
    expect(run(Metric.value(tagged)).count).toBe(1)
    expect(run(Metric.value(Metric.withAttributes(jobsFinished, { model, outcome: "completed" }))).count).toBe(0)
  })

  it("makes each series once", () => {
    expect(jobsFinishedOf("m", "completed")).toBe(jobsFinishedOf("m", "completed"))
    expect(jobsFinishedOf("m", "completed")).not.toBe(jobsFinishedOf("m", "failed"))
  })
})
