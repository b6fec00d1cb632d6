import { Cause, Clock, Context, Deferred, Duration, Effect, Exit, Fiber, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import { signingSecrets } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId } from "../domain/ids.js"
import type { DeliveryAttempt, WebhookDelivery } from "../domain/webhook.js"
import { nextAttemptAt, parseRetryAfter } from "../domain/webhookSchedule.js"
import { signatureHeader } from "../domain/webhookSignature.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { type AttemptOutcome, WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { WebhookSender } from "../ports/WebhookSender.js"
import { EngineConfig } from "./EngineConfig.js"

export const USER_AGENT = "genjobs-webhooks/0.1 (+https://github.com/genjobs)"
/** Spec 6.1: receivers answer within 30 seconds. */
export const WEBHOOK_TIMEOUT_MS = 30_000
/** A dispatcher's claim outlives one attempt's timeout comfortably. */
const LEASE_MS = 2 * WEBHOOK_TIMEOUT_MS
const RESPONSE_BODY_LIMIT = 1_024

const isSuccess = (status: number) => status >= 200 && status < 300
const honoursRetryAfter = (status: number) => status === 429 || status === 503

export const make = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveryRepo
  const accounts = yield* AccountRepo
  const sender = yield* WebhookSender
  const config = yield* EngineConfig

  /** One attempt: sign, send, and decide what follows from the answer. */
  const attempt = (delivery: WebhookDelivery, workerId: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const account = yield* accounts.get(delivery.accountId as AccountId)
      const secrets = Option.match(account, { onNone: () => [], onSome: (a) => signingSecrets(a, now) })
      const timestamp = Math.floor(now / 1000)
      const number = delivery.attempts.length + 1
      const result = yield* sender.send({
        url: delivery.url,
        body: delivery.payload,
        timeoutMs: WEBHOOK_TIMEOUT_MS,
        headers: {
          "content-type": "application/json",
          "user-agent": USER_AGENT,
          "x-service-timestamp": String(timestamp),
          "x-service-signature": signatureHeader(secrets, timestamp, delivery.payload),
          "x-webhook-delivery-id": delivery.id,
          "x-webhook-attempt": String(number)
        }
      }).pipe(Effect.either)
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
        ? parseRetryAfter(result.right.retryAfter, finished)
        : undefined
      const next = nextAttemptAt(number, finished, retryAfter)
      const outcome: AttemptOutcome = result._tag === "Right" && isSuccess(result.right.statusCode)
        ? { status: "sent" }
        : next === undefined
        ? { status: "failed" }
        : { status: "pending", nextAttemptAt: next }
      yield* deliveries.recordAttempt(delivery.id, workerId, record, outcome)
    })

  /** Claims and attempts one due delivery; false when none was due. */
  const deliverOnce = (workerId: string): Effect.Effect<boolean, StoreError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due = yield* deliveries.claimDue({ workerId, now, leaseMs: LEASE_MS })
      if (Option.isNone(due)) return false
      yield* attempt(due.value, workerId)
      return true
    })

  /** Dispatcher loops in the current scope; closing it lets attempts in flight finish. */
  const start = (concurrency: number) =>
    Effect.gen(function*() {
      const stopping = yield* Deferred.make<void>()
      // An idle loop stops at once; only an attempt in flight is waited for.
      const idle = Effect.sleep(Duration.millis(config.pollIntervalMs)).pipe(Effect.raceFirst(Deferred.await(stopping)))
      const processId = randomBytes(6).toString("hex")
      const loop = (n: number) =>
        Effect.gen(function*() {
          const workerId = `whd_${processId}_${n}`
          while (!(yield* Deferred.isDone(stopping))) {
            const exit = yield* Effect.exit(deliverOnce(workerId))
            if (Exit.isFailure(exit)) yield* Effect.logError("webhook dispatcher could not reach the store", Cause.pretty(exit.cause))
            if (Exit.isFailure(exit) || !exit.value) yield* idle
          }
        })
      const fibers = yield* Effect.forEach(Array.from({ length: concurrency }, (_, n) => n), (n) => Effect.forkScoped(loop(n)))
      yield* Effect.addFinalizer(() =>
        Deferred.succeed(stopping, undefined).pipe(
          Effect.zipRight(Fiber.joinAll(fibers).pipe(Effect.timeout(Duration.millis(WEBHOOK_TIMEOUT_MS)), Effect.ignore))
        )
      )
    })

  return { deliverOnce, start } as const
})

export class WebhookDispatcher extends Context.Tag("genjobs/WebhookDispatcher")<
  WebhookDispatcher,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(WebhookDispatcher, make)
}
