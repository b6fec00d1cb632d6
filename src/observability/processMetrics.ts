/**
 * The process metrics a Node service is expected to export (CPU, memory, heap, file
 * descriptors, handles, event-loop lag, GC, version): prom-client's `collectDefaultMetrics`, so
 * the usual Node.js dashboards and alerts read them unchanged. It has a registry of its own,
 * appended to the Effect metrics' text by `/metrics` (metricsRoute.ts).
 */
import { collectDefaultMetrics, Registry } from "prom-client"

let registry: Registry | undefined

/**
 * Starts the collectors, once per process: where /metrics is served (so the first scrape has a
 * loop delay and collections to show), else at the first scrape. They observe the process, not
 * an engine: two engines in one process share them rather than counting each collection twice.
 * Neither the delay monitor nor the GC observer keeps the process alive.
 */
export const startProcessMetrics = (): Registry => {
  if (registry === undefined) {
    registry = new Registry()
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 })
  }
  return registry
}

/** The process metrics in the Prometheus text format. */
export const processMetricsText = (): Promise<string> => startProcessMetrics().metrics()
