import { Cause, Clock, Context, Deferred, Duration, Effect, Exit, Fiber, FiberSet, Layer, Option, Queue } from "effect"
import { randomBytes } from "node:crypto"
import { signingSecrets } from "../domain/account.js"
import type { StoreError } from "../domain/errors.js"
import type { AccountId } from "../domain/ids.js"
import type { DeliveryAttempt, WebhookDelivery } from "../domain/webhook.js"
import { deadlineReason, nextAttemptAt, parseRetryAfter } from "../domain/webhookSchedule.js"
import { signatureHeader } from "../domain/webhookSignature.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { type AttemptOutcome, WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { WebhookNotDelivered, WebhookSender } from "../ports/WebhookSender.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { EngineConfig } from "./EngineConfig.js"

export const USER_AGENT = "genjobs-webhooks/0.1 (+https://github.com/genjobs)"
/**
 * A claim lasts the attempt's deadline plus this: time to record the outcome. An attempt is cut
 * off at its deadline, so its delivery is never claimed again while the attempt is live.
 */
export const LEASE_MARGIN_MS = 30_000
const RESPONSE_BODY_LIMIT = 1_024

const isSuccess = (status: number) => status >= 200 && status < 300
const honoursRetryAfter = (status: number) => status === 429 || status === 503

export const make = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveryRepo
  const accounts = yield* AccountRepo
  const sender = yield* WebhookSender
  const signal = yield* WebhookSignal
  const config = yield* EngineConfig
  const deadlineMs = config.webhookDeadlineMs
  const leaseMs = deadlineMs + LEASE_MARGIN_MS
  let claims = 0

  /**
   * Sends within the deadline, whatever the sender does: `disconnect` lets a sender that ignores
   * interruption finish in the background instead of holding the attempt past its deadline.
   */
  const send = (request: Parameters<WebhookSender["Type"]["send"]>[0]) =>
    Effect.disconnect(sender.send(request)).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(deadlineMs),
        onTimeout: () => new WebhookNotDelivered({ reason: deadlineReason(deadlineMs) })
      }),
      Effect.either
    )

  /** One attempt of a claimed delivery: sign, send, and record what follows from the answer. */
  const attempt = (delivery: WebhookDelivery) =>
    Effect.gen(function*() {
      const leaseHolder = delivery.leaseOwner!
      const now = yield* Clock.currentTimeMillis
      const account = yield* accounts.get(delivery.accountId as AccountId)
      const secrets = Option.match(account, { onNone: () => [], onSome: (a) => signingSecrets(a, now) })
      const timestamp = Math.floor(now / 1000)
      const number = delivery.attempts.length + 1
      const result = yield* send({
        url: delivery.url,
        body: delivery.payload,
        timeoutMs: deadlineMs,
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
        ? parseRetryAfter(result.right.retryAfter, finished)
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

  /** Leases one due delivery; each claim gets its own lease holder, so a stale attempt never records over a new one. */
  const claim = (workerId: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* deliveries.claimDue({
        workerId: `${workerId}_${++claims}`,
        now,
        leaseMs,
        maxPerAccount: config.webhookDeliveriesPerAccount
      })
    })

  /** Claims and attempts one due delivery; false when none was due. */
  const deliverOnce = (workerId: string): Effect.Effect<boolean, StoreError> =>
    Effect.gen(function*() {
      const due = yield* claim(workerId)
      if (Option.isNone(due)) return false
      yield* attempt(due.value)
      return true
    })

  /**
   * Up to `concurrency` attempts in flight in the current scope: one claimer leases due
   * deliveries (fairly across accounts, see claimDue) while slots are free and runs each in its
   * own fiber. Idle, it sleeps until the next attempt falls due, a signal, a finished attempt
   * (which may free an account at its cap) or the poll interval, whichever is first. Closing
   * the scope stops claiming and lets attempts in flight finish (each is bounded by the deadline).
   */
  const start = (concurrency: number) =>
    Effect.gen(function*() {
      const stopping = yield* Deferred.make<void>()
      const slots = yield* Effect.makeSemaphore(concurrency)
      const finished = yield* Queue.sliding<void>(1)
      const inFlight = yield* FiberSet.make()
      const workerId = `whd_${randomBytes(6).toString("hex")}`
      const poll = config.pollIntervalMs

      const idle = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const next = yield* deliveries.nextAttemptAfter(now).pipe(Effect.orElseSucceed(() => Option.none<number>()))
        const ms = Option.match(next, { onNone: () => poll, onSome: (at) => Math.min(poll, at - now) })
        yield* Effect.raceAll([signal.wait(ms), Queue.take(finished), Deferred.await(stopping)])
      })

      const run = (delivery: WebhookDelivery) =>
        attempt(delivery).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError("webhook attempt could not be recorded", { deliveryId: delivery.id }, Cause.pretty(cause))
          ),
          Effect.ensuring(slots.release(1).pipe(Effect.zipRight(Queue.offer(finished, undefined))))
        )

      const claimer = Effect.gen(function*() {
        while (true) {
          yield* slots.take(1)
          if (yield* Deferred.isDone(stopping)) return yield* slots.release(1)
          // This claim looks at everything finished so far; only later finishes should wake the loop.
          yield* Queue.takeAll(finished)
          const exit = yield* Effect.exit(claim(workerId))
          if (Exit.isSuccess(exit) && Option.isSome(exit.value)) {
            yield* FiberSet.run(inFlight, run(exit.value.value))
            continue
          }
          yield* slots.release(1)
          if (Exit.isFailure(exit)) {
            yield* Effect.logError("webhook dispatcher could not reach the store", Cause.pretty(exit.cause))
            yield* Effect.sleep(Duration.millis(poll)).pipe(Effect.raceFirst(Deferred.await(stopping)))
          } else {
            yield* idle
          }
        }
      })
      const fiber = yield* Effect.forkScoped(claimer)
      yield* Effect.addFinalizer(() =>
        Deferred.succeed(stopping, undefined).pipe(
          Effect.zipRight(Fiber.await(fiber)),
          // Every slot back means every attempt in flight has been recorded.
          Effect.zipRight(slots.take(concurrency)),
          Effect.timeout(Duration.millis(leaseMs)),
          Effect.ignore
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
