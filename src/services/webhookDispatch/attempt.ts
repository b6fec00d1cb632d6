import { Clock, Duration, Effect, Option } from "effect"
import { signingSecrets } from "../../domain/account.js"
import type { StoreError } from "../../domain/errors.js"
import type { AccountId } from "../../domain/ids.js"
import type { DeliveryAttempt, WebhookDelivery } from "../../domain/webhook.js"
import { parseRetryAfterMs } from "../../domain/retryAfter.js"
import { deadlineReason, nextAttemptAt } from "../../domain/webhookSchedule.js"
import { signatureHeader } from "../../domain/webhookSignature.js"
import type { AttemptOutcome } from "../../ports/WebhookDeliveryRepo.js"
import { WebhookNotDelivered, type WebhookSender } from "../../ports/WebhookSender.js"
import type { DispatchDeps } from "./deps.js"

export const USER_AGENT = "genjobs-webhooks/0.1 (+https://github.com/genjobs)"
const RESPONSE_BODY_LIMIT = 1_024

const isSuccess = (status: number) => status >= 200 && status < 300
const honoursRetryAfter = (status: number) => status === 429 || status === 503

/**
 * Sends within the deadline, whatever the sender does: `disconnect` lets a sender that ignores
 * interruption finish in the background instead of holding the attempt past its deadline.
 */
const send = ({ config, sender }: Pick<DispatchDeps, "config" | "sender">, request: Parameters<WebhookSender["Type"]["send"]>[0]) =>
  Effect.disconnect(sender.send(request)).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(config.webhookDeadlineMs),
      onTimeout: () => new WebhookNotDelivered({ reason: deadlineReason(config.webhookDeadlineMs) })
    }),
    Effect.either
  )

/** One attempt of a claimed delivery: sign, send, and record what follows from the answer. */
export const attempt = (deps: DispatchDeps, delivery: WebhookDelivery): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    const { accounts, config, deliveries } = deps
    const leaseHolder = delivery.leaseOwner!
    const now = yield* Clock.currentTimeMillis
    const account = yield* accounts.get(delivery.accountId as AccountId)
    const secrets = Option.match(account, { onNone: () => [], onSome: (a) => signingSecrets(a, now) })
    const timestamp = Math.floor(now / 1000)
    const number = delivery.attempts.length + 1
    const result = yield* send(deps, {
      url: delivery.url,
      body: delivery.payload,
      timeoutMs: config.webhookDeadlineMs,
      headers: {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "x-service-timestamp": String(timestamp),
        "x-service-signature": signatureHeader(secrets, timestamp, delivery.payload),
        "x-webhook-delivery-id": delivery.id,
        "x-webhook-attempt": String(number)
      }
    })
    const finished = yield* Clock.currentTimeMillis
    const record: DeliveryAttempt = {
      attempt: number,
      at: now,
      statusCode: result._tag === "Right" ? result.right.statusCode : null,
      error: result._tag === "Left"
        ? result.left.reason
        : isSuccess(result.right.statusCode)
        ? null
        : `HTTP ${result.right.statusCode}`,
      durationMs: finished - now,
      responseBody: result._tag === "Right" ? result.right.body.slice(0, RESPONSE_BODY_LIMIT) : null
    }
    const retryAfter = result._tag === "Right" && honoursRetryAfter(result.right.statusCode)
      ? parseRetryAfterMs(result.right.retryAfter, finished)
      : undefined
    const next = nextAttemptAt(number, finished, retryAfter, config.webhookRetryDelaysMs)
    const outcome: AttemptOutcome = result._tag === "Right" && isSuccess(result.right.statusCode)
      ? { status: "sent" }
      : next === undefined
      ? { status: "failed" }
      : { status: "pending", nextAttemptAt: next }
    const recorded = yield* deliveries.recordAttempt(delivery.id, leaseHolder, record, outcome)
    if (!recorded) {
      yield* Effect.logWarning("webhook attempt not recorded: another dispatcher claimed the delivery meanwhile", {
        deliveryId: delivery.id,
        attempt: number
      })
    }
  })
