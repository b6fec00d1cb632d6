import { Metric } from "effect"
import * as Keys from "./metricKeys.js"

/** The metric a key stands for, of one series (its labels). */
type MetricOf<K extends Keys.MetricKey> = K["type"] extends "Histogram" ? Metric.Histogram<number> : K["type"] extends "Gauge" ? Metric.Gauge<number> : Metric.Counter<number>

/** A key's metric, with the labels given (none: the series without labels). */
export const metricOf = <K extends Keys.MetricKey>(key: K, attributes?: Metric.Metric.AttributeSet): MetricOf<K> => {
  const options = { description: key.description, ...(attributes === undefined ? {} : { attributes }) }
  switch (key.type) {
    case "Counter":
      return Metric.counter(key.name, options) as MetricOf<K>
    case "Gauge":
      return Metric.gauge(key.name, options) as MetricOf<K>
    case "Histogram":
      return Metric.histogram(key.name, { ...options, boundaries: key.boundaries }) as MetricOf<K>
  }
}

/**
 * The labelled series of a metric, each made once with its labels (attributes). A metric made
 * with `Metric.withAttributes` adds them to the context on every update: a few microseconds on
 * every request and every job. Label values come from bounded sets (routes, statuses, the
 * catalog's models, outcomes), as the registry's series do.
 */
const family = <K extends Keys.MetricKey, const Names extends ReadonlyArray<string>>(key: K, ...names: Names) => {
  const made = new Map<string, MetricOf<K>>()
  return (...values: { readonly [I in keyof Names]: string }): MetricOf<K> => {
    // NUL never reaches a label value: the request limits refuse it in every input.
    const id = values.join("\u0000")
    let metric = made.get(id)
    if (metric === undefined) {
      metric = metricOf(key, Object.fromEntries(names.map((name, i) => [name, values[i]!])))
      made.set(id, metric)
    }
    return metric
  }
}

export const jobsSubmittedOf = family(Keys.jobsSubmitted, "model")
export const jobsFinishedOf = family(Keys.jobsFinished, "model", "outcome")
export const jobsFailedOf = family(Keys.jobsFailed, "type", "retryable")
export const pickupSecondsOf = family(Keys.pickupSeconds, "model")
export const runSecondsOf = family(Keys.runSeconds, "model", "outcome")
export const webhookAttemptsOf = family(Keys.webhookAttempts, "outcome")
export const httpRequestsOf = family(Keys.httpRequests, "method", "route", "status")
export const httpDurationOf = family(Keys.httpDuration, "method", "route")
export const poolConnectionsOf = family(Keys.poolConnections, "state")
export const providerStartsOf = family(Keys.providerStarts, "provider")
export const providerFailuresOf = family(Keys.providerFailures, "provider", "credential")
export const providerFallbacksOf = family(Keys.providerFallbacks, "provider")
export const requestsShedOf = family(Keys.requestsShed, "reason")
export const providerStartsUnconfirmedOf = family(Keys.providerStartsUnconfirmed, "provider")
export const watchedGenerationsOf = family(Keys.watchedGenerations, "provider")
export const providerPollLagSecondsOf = family(Keys.providerPollLagSeconds, "provider")
export const providerPollsOf = family(Keys.providerPolls, "provider")
