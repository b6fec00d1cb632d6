import { Metric } from "effect"
import * as Keys from "./metricKeys.js"

/**
 * The engine's metrics. They live in Effect's global metric registry, as Prometheus client
 * libraries keep a default registry: one process, one set of series, whatever number of
 * engines it runs. Counters end in `_total` and durations are in seconds, as Prometheus names them.
 * Their descriptions are in metricKeys.ts.
 */

export const jobsSubmitted = Metric.fromMetricKey(Keys.jobsSubmitted)
export const jobsFinished = Metric.fromMetricKey(Keys.jobsFinished)
export const jobsAbandoned = Metric.fromMetricKey(Keys.jobsAbandoned)
export const pickupSeconds = Metric.fromMetricKey(Keys.pickupSeconds)
export const runSeconds = Metric.fromMetricKey(Keys.runSeconds)
export const queuePending = Metric.fromMetricKey(Keys.queuePending)
export const webhookAttempts = Metric.fromMetricKey(Keys.webhookAttempts)
export const httpRequests = Metric.fromMetricKey(Keys.httpRequests)
export const httpDuration = Metric.fromMetricKey(Keys.httpDuration)
export const poolConnections = Metric.fromMetricKey(Keys.poolConnections)
export const poolWaiting = Metric.fromMetricKey(Keys.poolWaiting)
export const providerStarts = Metric.fromMetricKey(Keys.providerStarts)
export const providerFailures = Metric.fromMetricKey(Keys.providerFailures)
export const providerFallbacks = Metric.fromMetricKey(Keys.providerFallbacks)
export const requestsShed = Metric.fromMetricKey(Keys.requestsShed)
export const providerStartsUnconfirmed = Metric.fromMetricKey(Keys.providerStartsUnconfirmed)
export const watchedGenerations = Metric.fromMetricKey(Keys.watchedGenerations)
export const providerPollLagSeconds = Metric.fromMetricKey(Keys.providerPollLagSeconds)
export const providerPolls = Metric.fromMetricKey(Keys.providerPolls)
