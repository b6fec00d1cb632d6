import { Effect, Layer, Metric } from "effect"
import { WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { WebhookSender } from "../ports/WebhookSender.js"
import { inJobSpan } from "./jobSpans.js"
import { webhookAttemptsOf } from "./metricSeries.js"

/** Deliveries claimed and not yet recorded by this process; a lost lease can strand a few, so it is bounded. */
const IN_FLIGHT_REMEMBERED = 10_000

/** Only the host of a webhook URL is logged: receivers often put a token in the path or query. */
const hostOf = (url: string) => {
  try {
    return new URL(url).host
  } catch {
    return "invalid"
  }
}

/**
 * The dispatcher's WebhookDeliveryRepo, observed: one log line and one count per recorded
 * attempt (delivered; attempt failed, with its status or reason and when the next is due;
 * delivery failed after its last attempt), with the job the delivery is about.
 */
export const observeWebhookDeliveries = (repo: WebhookDeliveryRepo["Service"]): WebhookDeliveryRepo["Service"] => {
  const claimed = new Map<string, { readonly jobId: string; readonly host: string }>()
  return {
    ...repo,
    claimDue: (options) =>
      Effect.tap(repo.claimDue(options), (deliveries) =>
        Effect.sync(() => {
          for (const delivery of deliveries) {
            if (claimed.size >= IN_FLIGHT_REMEMBERED) claimed.delete(claimed.keys().next().value!)
            claimed.set(delivery.id, { jobId: delivery.jobId, host: hostOf(delivery.url) })
          }
        })),
    recordAttempt: (id, workerId, attempt, outcome) =>
      Effect.tap(repo.recordAttempt(id, workerId, attempt, outcome), (recorded) => {
        const known = claimed.get(id)
        claimed.delete(id)
        if (!recorded) return Effect.void
        const fields = {
          deliveryId: id,
          ...(known === undefined ? {} : { jobId: known.jobId, host: known.host }),
          attempt: attempt.attempt,
          ...(attempt.statusCode === null ? {} : { statusCode: attempt.statusCode }),
          durationMs: attempt.durationMs
        }
        const label = outcome.status === "sent" ? "delivered" : outcome.status === "pending" ? "retry" : "failed"
        const line = outcome.status === "sent"
          ? Effect.logInfo("webhook delivered", fields)
          : outcome.status === "pending"
          ? Effect.logWarning("webhook attempt failed", {
            ...fields,
            error: attempt.error,
            nextAttemptAt: new Date(outcome.nextAttemptAt).toISOString()
          })
          : Effect.logError("webhook delivery failed", { ...fields, error: attempt.error })
        return Effect.andThen(line, Metric.update(webhookAttemptsOf(label), 1))
      })
  }
}

const jobIdOf = (payload: string): string => {
  try {
    const jobId = (JSON.parse(payload) as { jobId?: unknown }).jobId
    return typeof jobId === "string" ? jobId : "unknown"
  } catch {
    return "unknown"
  }
}

/** The WebhookSender with a span per attempt, in the job's trace when this process knows it. */
export const traceWebhookSender = (sender: WebhookSender["Service"]): WebhookSender["Service"] => ({
  send: (request) =>
    sender.send(request).pipe(
      Effect.tap((response) => Effect.annotateCurrentSpan("http.response.status_code", response.statusCode)),
      inJobSpan("genjobs.webhook.send", () => jobIdOf(request.body), {
        "genjobs.delivery_id": request.headers["x-webhook-delivery-id"],
        "genjobs.webhook_attempt": Number(request.headers["x-webhook-attempt"]),
        "server.address": hostOf(request.url)
      })
    )
})

/** What the webhook dispatcher sees: both ports of the context, observed. */
export const layerObservedWebhooks = Layer.merge(
  Layer.effect(WebhookDeliveryRepo, Effect.map(WebhookDeliveryRepo, observeWebhookDeliveries)),
  Layer.effect(WebhookSender, Effect.map(WebhookSender, traceWebhookSender))
)
