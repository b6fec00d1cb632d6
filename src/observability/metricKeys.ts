import { Metric } from "effect"

/**
 * The keys of the engine's metrics: their names, kinds, boundaries and descriptions. The
 * metrics themselves are in metrics.ts; each labelled series is made from its key once, in
 * metricSeries.ts.
 */

/** A metric's name, kind, description and, for a histogram, its bucket boundaries. */
export type MetricKey =
  | { readonly type: "Counter" | "Gauge"; readonly name: string; readonly description: string }
  | { readonly type: "Histogram"; readonly name: string; readonly description: string; readonly boundaries: ReadonlyArray<number> }

const counter = (name: string, options: { readonly description: string }) => ({ type: "Counter", name, ...options }) as const
const gauge = (name: string, options: { readonly description: string }) => ({ type: "Gauge", name, ...options }) as const
const histogram = (name: string, boundaries: ReadonlyArray<number>, description: string) =>
  ({ type: "Histogram", name, boundaries, description }) as const

const seconds = (bounds: ReadonlyArray<number>) => Metric.boundariesFromIterable(bounds)

export const jobsSubmitted = counter("genjobs_jobs_submitted_total", {
  description: "Jobs admitted (charged and queued), by model. Idempotent replays are not counted."
})

export const jobsFinished = counter("genjobs_jobs_finished_total", {
  description: "Jobs that reached a final status, by model and outcome (completed, failed, cancelled)."
})

export const jobsFailed = counter("genjobs_jobs_failed_total", {
  description: "Failed jobs by failure type (provider_unavailable, provider_timeout, input_rejected, content_blocked, output_invalid, rate_limited, internal) and retryable (true, false); jobs the reaper abandoned count as internal, retryable."
})

export const jobsAbandoned = counter("genjobs_jobs_abandoned_total", {
  description: "Jobs the reaper failed after their last attempt's lease ran out (also counted as failed when their model is known)."
})

export const pickupSeconds = histogram(
  "genjobs_job_pickup_seconds",
  seconds([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]),
  "Time from a job's submit to its first claim by a worker, by model."
)

export const runSeconds = histogram(
  "genjobs_job_run_seconds",
  seconds([0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600]),
  "Time from a job's first claim to its completion or failure, by model and outcome."
)

export const queuePending = gauge("genjobs_queue_pending_jobs", {
  description: "Jobs waiting for a worker, read from the store at scrape time."
})

export const webhookAttempts = counter("genjobs_webhook_attempts_total", {
  description: "Webhook attempts by outcome: delivered (2xx), retry (another attempt is scheduled), failed (the last attempt failed)."
})

export const httpRequests = counter("genjobs_http_requests_total", {
  description: "HTTP requests answered, by method, route template and status."
})

export const httpDuration = histogram(
  "genjobs_http_request_duration_seconds",
  seconds([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "Time to answer an HTTP request (to the response's headers), by method and route template."
)

export const poolConnections = gauge("genjobs_db_pool_connections", {
  description: "Database pool connections by state (total, idle), read at scrape time. PostgreSQL only."
})

export const poolWaiting = gauge("genjobs_db_pool_waiting_requests", {
  description: "Queries waiting for a free pool connection, read at scrape time. PostgreSQL only."
})

export const providerStarts = counter("genjobs_provider_starts_total", {
  description: "Starts sent to a provider, by provider id (each route tried and each retry counts)."
})

export const providerFailures = counter("genjobs_provider_failures_total", {
  description: "Provider calls (start, poll, cancel, recover) that got no answer or a retryable refusal, by provider id and credential id."
})

export const providerStartsUnconfirmed = counter("genjobs_provider_starts_unconfirmed_total", {
  description:
    "Starts whose answer was lost and that the provider's search (recover) did not find, by provider id: each job failed with a refund, and the provider may have run (and billed) its generation."
})

export const providerFallbacks = counter("genjobs_provider_fallbacks_total", {
  description: "Starts that moved on from a provider to the version's next route (refused, circuit open, or not registered), by the provider left."
})

export const requestsShed = counter("genjobs_requests_shed_total", {
  description:
    "Requests answered 503 at once because the store could not serve them within their bound (STORE_WAIT_MS), nothing written, by reason (store_busy)."
})

export const watchedGenerations = gauge("genjobs_provider_watched_generations", {
  description: "Generations started at a provider and waiting on this process's watch list for their end, by provider id."
})

export const providerPollLagSeconds = histogram(
  "genjobs_provider_poll_lag_seconds",
  seconds([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]),
  "Time from when a watched generation's poll was due to when it was sent, by provider id: grows when polls are held back by the provider's poll budget or the pollers are behind."
)

export const providerPolls = counter("genjobs_provider_polls_total", {
  description: "Polls of watched generations sent to a provider, by provider id."
})
