import { Clock, Duration, Effect, Fiber, Option, Result } from "effect"
import { signingSecrets } from "../../domain/account.js"
import type { StoreError } from "../../domain/errors.js"
import type { AccountId } from "../../domain/ids.js"
import type { DeliveryAttempt, WebhookDelivery } from "../../domain/webhook.js"
import { parseRetryAfterMs } from "../../domain/retryAfter.js"
import { deadlineReason, nextAttemptAt } from "../../domain/webhookSchedule.js"
import { signatureHeader } from "../../domain/webhookSignature.js"
import { standardHeaders } from "../../domain/standardWebhook.js"
import type { AttemptOutcome } from "../../ports/WebhookDeliveryRepo.js"
import { WebhookNotDelivered, type WebhookRequest, type WebhookResponse } from "../../ports/WebhookSender.js"
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

/** How a send went: the receiver's answer, or why there was none. */
export type Sent = Result.Result<WebhookResponse, WebhookNotDelivered>

/** What a send that reached its deadline is recorded as. */
export const pastDeadline = (deadlineMs: number): Sent => Result.fail(new WebhookNotDelivered({ reason: deadlineReason(deadlineMs) }))

/** An attempt made ready to send: its number, when it began, and its request signed at that moment. */
export interface Prepared {
  readonly number: number
  readonly at: number
  readonly request: WebhookRequest
}

/** A claimed delivery's next attempt, signed with its account's secrets now. */
export const prepare = ({ config, signingAccount }: Pick<DispatchDeps, "config" | "signingAccount">, delivery: WebhookDelivery) =>
  Effect.gen(function*() {
    const at = yield* Clock.currentTimeMillis
    const account = yield* signingAccount(delivery.accountId as AccountId)
    const secrets = Option.match(account, { onNone: () => [], onSome: (a) => signingSecrets(a, at) })
    const standard = Option.isSome(account) && account.value.standardWebhooks
    const timestamp = Math.floor(at / 1000)
    const number = delivery.attempts.length + 1
    const request: WebhookRequest = {
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
    }
    return { number, at, request } satisfies Prepared
  })

/** Records the attempt `prepared` as `result` tells, and where the delivery goes next; only while the claim's lease holds. */
export const conclude = (
  { config, deliveries }: Pick<DispatchDeps, "config" | "deliveries">,
  delivery: WebhookDelivery,
  { at, number }: Prepared,
  result: Sent
): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    const finished = yield* Clock.currentTimeMillis
    const record: DeliveryAttempt = {
      attempt: number,
      at,
      statusCode: result._tag === "Success" ? result.success.statusCode : null,
      error: result._tag === "Failure"
        ? result.failure.reason
        : isSuccess(result.success.statusCode)
        ? null
        : `HTTP ${result.success.statusCode}`,
      durationMs: finished - at,
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
    const recorded = yield* deliveries.recordAttempt(delivery.id, delivery.leaseOwner!, record, outcome)
    if (!recorded) {
      yield* Effect.logWarning("webhook attempt not recorded: another dispatcher claimed the delivery meanwhile", {
        deliveryId: delivery.id,
        attempt: number
      })
    }
  })

/**
 * One attempt of a claimed delivery on the caller's fiber (`deliverOnce`): sign, send within the
 * deadline whatever the sender does (`disconnected` lets a sender that ignores interruption
 * finish in the background instead of holding the attempt past its deadline), record. The
 * dispatcher's runners send on their own fibers and keep the deadlines as data (start.ts).
 */
export const attempt = (deps: DispatchDeps, delivery: WebhookDelivery): Effect.Effect<void, StoreError> =>
  Effect.gen(function*() {
    const prepared = yield* prepare(deps, delivery)
    const deadlineMs = deps.config.webhookDeadlineMs
    const result = yield* disconnected(deps.sender.send(prepared.request)).pipe(
      Effect.timeoutOrElse({ duration: Duration.millis(deadlineMs), orElse: () => Effect.fromResult(pastDeadline(deadlineMs)) }),
      Effect.result
    )
    yield* conclude(deps, delivery, prepared, result)
  })
