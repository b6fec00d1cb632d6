import { Metric, MetricKey, type MetricKeyType, MetricLabel } from "effect"
import * as Keys from "./metricKeys.js"

/**
 * The labelled series of a metric, each made once. `Metric.tagged` makes a metric whose every
 * update joins its labels into a new array, so the registry's lookup makes and hashes a new
 * key each time: a few microseconds on every request and every job. Label values come from
 * bounded sets (routes, statuses, the catalog's models, outcomes), as the registry's series do.
 */
const family = <Type extends MetricKeyType.MetricKeyType<any, any>, const Names extends ReadonlyArray<string>>(
  key: MetricKey.MetricKey<Type>,
  ...names: Names
) => {
  const made = new Map<string, Metric.Metric<Type, MetricKeyType.MetricKeyType.InType<Type>, MetricKeyType.MetricKeyType.OutType<Type>>>()
  return (...values: { readonly [I in keyof Names]: string }): Metric.Metric<
    Type,
    MetricKeyType.MetricKeyType.InType<Type>,
    MetricKeyType.MetricKeyType.OutType<Type>
  > => {
    // NUL never reaches a label value: the request limits refuse it in every input.
    const id = values.join("\u0000")
    let metric = made.get(id)
    if (metric === undefined) {
      // In the order Metric.tagged chains would give them: the same key, the same series.
      metric = Metric.fromMetricKey(MetricKey.taggedWithLabels(key, names.map((name, i) => MetricLabel.make(name, values[i]!))))
      made.set(id, metric)
    }
    return metric
  }
}

export const jobsSubmittedOf = family(Keys.jobsSubmitted, "model")
export const jobsFinishedOf = family(Keys.jobsFinished, "model", "outcome")
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
