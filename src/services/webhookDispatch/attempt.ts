import { Clock, Duration, Effect, Fiber, Option } from "effect"
import { signingSecrets } from "../../domain/account.js"
import type { StoreError } from "../../domain/errors.js"
import type { AccountId } from "../../domain/ids.js"
import type { DeliveryAttempt, WebhookDelivery } from "../../domain/webhook.js"
import { parseRetryAfterMs } from "../../domain/retryAfter.js"
import { deadlineReason, nextAttemptAt } from "../../domain/webhookSchedule.js"
import { signatureHeader } from "../../domain/webhookSignature.js"
import { standardHeaders } from "../../domain/standardWebhook.js"
import type { AttemptOutcome } from "../../ports/WebhookDeliveryRepo.js"
import { WebhookNotDelivered, type WebhookSender } from "../../ports/WebhookSender.js"
import type { DispatchDeps } from "./deps.js"

export const USER_AGENT = "genjobs-webhooks/0.1 (+https://github.com/genjobs)"
const RESPONSE_BODY_LIMIT = 1_024

const isSuccess = (status: number) => status >= 200 && status < 300
const honoursRetryAfter = (status: number) => status === 429 || status === 503

/**
 * Runs `effect` in a fiber of its own that an interruption of the caller interrupts without
 * waiting for it (Effect 3's `disconnect`, which Effect 4 has not): a timeout then ends at once.
 */
const disconnected = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.forkDetach(effect), (fiber) =>
      Effect.onInterrupt(restore(Fiber.join(fiber)), () => Effect.sync(() => fiber.interruptUnsafe()))))

/**
 * Sends within the deadline, whatever the sender does: `disconnected` lets a sender that ignores
 * interruption finish in the background instead of holding the attempt past its deadline.
 */
const send = ({ config, sender }: Pick<DispatchDeps, "config" | "sender">, request: Parameters<WebhookSender["Service"]["send"]>[0]) =>
  disconnected(sender.send(request)).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(config.webhookDeadlineMs),
      orElse: () => Effect.fail(new WebhookNotDelivered({ reason: deadlineReason(config.webhookDeadlineMs) }))
    }),
    Effect.result
  )

/** One attempt of a claimed delivery: sign, send, and record what follows from the answer. */
export const attempt = (deps: DispatchDeps, delivery: WebhookDelivery): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    const { config, deliveries, signingAccount } = deps
    const leaseHolder = delivery.leaseOwner!
    const now = yield* Clock.currentTimeMillis
    const account = yield* signingAccount(delivery.accountId as AccountId)
    const secrets = Option.match(account, { onNone: () => [], onSome: (a) => signingSecrets(a, now) })
    const standard = Option.isSome(account) && account.value.standardWebhooks
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
        "x-webhook-attempt": String(number),
        // The delivery's id: the same on every attempt, so a receiver deduplicates by webhook-id.
        ...(standard ? standardHeaders(secrets, delivery.id, timestamp, delivery.payload) : {})
      }
    })
    const finished = yield* Clock.currentTimeMillis
    const record: DeliveryAttempt = {
      attempt: number,
      at: now,
      statusCode: result._tag === "Success" ? result.success.statusCode : null,
      error: result._tag === "Failure"
        ? result.failure.reason
        : isSuccess(result.success.statusCode)
        ? null
        : `HTTP ${result.success.statusCode}`,
      durationMs: finished - now,
      responseBody: result._tag === "Success" ? result.success.body.slice(0, RESPONSE_BODY_LIMIT) : null
    }
    const retryAfter = result._tag === "Success" && honoursRetryAfter(result.success.statusCode)
      ? parseRetryAfterMs(result.success.retryAfter, finished)
      : undefined
    const next = nextAttemptAt(number, finished, retryAfter, config.webhookRetryDelaysMs)
    const outcome: AttemptOutcome = result._tag === "Success" && isSuccess(result.success.statusCode)
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
