import { Effect, Metric } from "effect"

/**
 * Counts every fiber started under the effect it is provided to (Effect 4 has no supervisors: the
 * runtime reports each fiber's start to the FiberRuntimeMetrics service its context carries).
 */
export const startedFibers = () => {
  const counter = { started: 0 }
  const service: Metric.FiberRuntimeMetricsService = {
    recordFiberStart: () => {
      counter.started++
    },
    recordFiberEnd: () => {}
  }
  return { counter, count: Effect.provideService(Metric.FiberRuntimeMetrics, service) }
}
