import { MetricBoundaries, MetricKey } from "effect"

/**
 * The keys of the engine's metrics: their names, kinds, boundaries and descriptions. The
 * metrics themselves are in metrics.ts; each labelled series is made from its key once, in
 * metricSeries.ts.
 */

const seconds = (bounds: ReadonlyArray<number>) => MetricBoundaries.fromIterable(bounds)

export const jobsSubmitted = MetricKey.counter("genjobs_jobs_submitted_total", {
  description: "Jobs admitted (charged and queued), by model. Idempotent replays are not counted."
})

export const jobsFinished = MetricKey.counter("genjobs_jobs_finished_total", {
  description: "Jobs that reached a final status, by model and outcome (completed, failed, cancelled)."
})

export const jobsAbandoned = MetricKey.counter("genjobs_jobs_abandoned_total", {
  description: "Jobs the reaper failed after their last attempt's lease ran out (also counted as failed when their model is known)."
})

export const pickupSeconds = MetricKey.histogram(
  "genjobs_job_pickup_seconds",
  seconds([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]),
  "Time from a job's submit to its first claim by a worker, by model."
)

export const runSeconds = MetricKey.histogram(
  "genjobs_job_run_seconds",
  seconds([0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600]),
  "Time from a job's first claim to its completion or failure, by model and outcome."
)

export const queuePending = MetricKey.gauge("genjobs_queue_pending_jobs", {
  description: "Jobs waiting for a worker, read from the store at scrape time."
})

export const webhookAttempts = MetricKey.counter("genjobs_webhook_attempts_total", {
  description: "Webhook attempts by outcome: delivered (2xx), retry (another attempt is scheduled), failed (the last attempt failed)."
})

export const httpRequests = MetricKey.counter("genjobs_http_requests_total", {
  description: "HTTP requests answered, by method, route template and status."
})

export const httpDuration = MetricKey.histogram(
  "genjobs_http_request_duration_seconds",
  seconds([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]),
  "Time to answer an HTTP request (to the response's headers), by method and route template."
)

export const poolConnections = MetricKey.gauge("genjobs_db_pool_connections", {
  description: "Database pool connections by state (total, idle), read at scrape time. PostgreSQL only."
})

export const poolWaiting = MetricKey.gauge("genjobs_db_pool_waiting_requests", {
  description: "Queries waiting for a free pool connection, read at scrape time. PostgreSQL only."
})

export const providerStarts = MetricKey.counter("genjobs_provider_starts_total", {
  description: "Starts sent to a provider, by provider id (each route tried and each retry counts)."
})

export const providerFailures = MetricKey.counter("genjobs_provider_failures_total", {
  description: "Provider calls (start, poll, cancel, recover) that got no answer or a retryable refusal, by provider id and credential id."
})

export const providerStartsUnconfirmed = MetricKey.counter("genjobs_provider_starts_unconfirmed_total", {
  description:
    "Starts whose answer was lost and that the provider's search (recover) did not find, by provider id: each job failed with a refund, and the provider may have run (and billed) its generation."
})

export const providerFallbacks = MetricKey.counter("genjobs_provider_fallbacks_total", {
  description: "Starts that moved on from a provider to the version's next route (refused, circuit open, or not registered), by the provider left."
})

export const requestsShed = MetricKey.counter("genjobs_requests_shed_total", {
  description:
    "Requests answered 503 at once because the store could not serve them within their bound (STORE_WAIT_MS), nothing written, by reason (store_busy)."
})

export const watchedGenerations = MetricKey.gauge("genjobs_provider_watched_generations", {
  description: "Generations started at a provider and waiting on this process's watch list for their end, by provider id."
})

export const providerPollLagSeconds = MetricKey.histogram(
  "genjobs_provider_poll_lag_seconds",
  seconds([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]),
  "Time from when a watched generation's poll was due to when it was sent, by provider id: grows when polls are held back by the provider's poll budget or the pollers are behind."
)

export const providerPolls = MetricKey.counter("genjobs_provider_polls_total", {
  description: "Polls of watched generations sent to a provider, by provider id."
})
