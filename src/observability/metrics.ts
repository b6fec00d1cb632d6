import { metricOf } from "./metricSeries.js"
import * as Keys from "./metricKeys.js"

/**
 * The engine's metrics. They live in Effect's global metric registry, as Prometheus client
 * libraries keep a default registry: one process, one set of series, whatever number of
 * engines it runs. Counters end in `_total` and durations are in seconds, as Prometheus names them.
 * Their descriptions are in metricKeys.ts.
 */

export const jobsSubmitted = metricOf(Keys.jobsSubmitted)
export const jobsFinished = metricOf(Keys.jobsFinished)
export const jobsAbandoned = metricOf(Keys.jobsAbandoned)
export const pickupSeconds = metricOf(Keys.pickupSeconds)
export const runSeconds = metricOf(Keys.runSeconds)
export const queuePending = metricOf(Keys.queuePending)
export const webhookAttempts = metricOf(Keys.webhookAttempts)
export const httpRequests = metricOf(Keys.httpRequests)
export const httpDuration = metricOf(Keys.httpDuration)
export const poolConnections = metricOf(Keys.poolConnections)
export const poolWaiting = metricOf(Keys.poolWaiting)
export const providerStarts = metricOf(Keys.providerStarts)
export const providerFailures = metricOf(Keys.providerFailures)
export const providerFallbacks = metricOf(Keys.providerFallbacks)
export const requestsShed = metricOf(Keys.requestsShed)
export const providerStartsUnconfirmed = metricOf(Keys.providerStartsUnconfirmed)
export const watchedGenerations = metricOf(Keys.watchedGenerations)
export const providerPollLagSeconds = metricOf(Keys.providerPollLagSeconds)
export const providerPolls = metricOf(Keys.providerPolls)
