import { Effect, Metric } from "effect"
import { describe, expect, it } from "vitest"
import { jobsFinished, jobsSubmitted } from "../../src/observability/metrics.js"
import { jobsFinishedOf, jobsSubmittedOf } from "../../src/observability/metricSeries.js"

const run = <A>(effect: Effect.Effect<A>) => Effect.runSync(effect)

describe("labelled metric series", () => {
  it("counts into the series a user reads with Metric.tagged on the public metric", () => {
    const model = `series-test-${Math.random()}`
    run(Metric.increment(jobsSubmittedOf(model)))
    run(Metric.increment(jobsSubmittedOf(model)))
    expect(run(Metric.value(Metric.tagged(jobsSubmitted, "model", model))).count).toBe(2)
  })

  it("keeps labels in the order of the tagged chain, so two labels address one series", () => {
    const model = `series-test-${Math.random()}`
    run(Metric.increment(jobsFinishedOf(model, "failed")))
    const tagged = Metric.tagged(Metric.tagged(jobsFinished, "model", model), "outcome", "failed")
    expect(run(Metric.value(tagged)).count).toBe(1)
    expect(run(Metric.value(Metric.tagged(Metric.tagged(jobsFinished, "model", model), "outcome", "completed"))).count).toBe(0)
  })

  it("makes each series once", () => {
    expect(jobsFinishedOf("m", "completed")).toBe(jobsFinishedOf("m", "completed"))
    expect(jobsFinishedOf("m", "completed")).not.toBe(jobsFinishedOf("m", "failed"))
  })
})
