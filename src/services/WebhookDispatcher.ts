import { Context, Effect, Layer, Option } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { AccountId } from "../domain/ids.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { StoreChanges } from "../ports/StoreChanges.js"
import { WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { WebhookSender } from "../ports/WebhookSender.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { EngineConfig } from "./EngineConfig.js"
import { makeStoreCache } from "./storeCache.js"
import { attempt } from "./webhookDispatch/attempt.js"
import { makeClaim } from "./webhookDispatch/claim.js"
import type { DispatchDeps } from "./webhookDispatch/deps.js"
import { start } from "./webhookDispatch/start.js"

export { USER_AGENT } from "./webhookDispatch/attempt.js"

/**
 * A claim lasts the attempt's deadline plus this: time to record the outcome. An attempt is cut
 * off at its deadline, so its delivery is never claimed again while the attempt is live.
 */
export const LEASE_MARGIN_MS = 30_000

/** Sends webhook deliveries: the attempt, the claimer and its start live under webhookDispatch/. */
export const make = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveryRepo
  const config = yield* EngineConfig
  const leaseMs = config.webhookDeadlineMs + LEASE_MARGIN_MS
  const accounts = yield* AccountRepo
  // Every attempt signs with its account's secrets: stores that tell of changes to accounts let
  // them be cached (a rotation or a settings change drops them, as it drops the keys'); the
  // store's read was a round trip per attempt (0.9 ms of a PostgreSQL delivery's time).
  const changes = yield* Effect.serviceOption(StoreChanges)
  const deps: DispatchDeps = {
    deliveries,
    signingAccount: Option.isSome(changes)
      ? makeStoreCache(changes.value, "access", (id) => accounts.get(id as AccountId))
      : accounts.get,
    sender: yield* WebhookSender,
    signal: yield* WebhookSignal,
    config,
    leaseMs,
    claim: makeClaim({ config, deliveries, leaseMs })
  }

  /** Claims and attempts one due delivery; false when none was due. */
  const deliverOnce = (workerId: string): Effect.Effect<boolean, StoreError> =>
    Effect.gen(function*() {
      const [due] = yield* deps.claim(workerId, 1)
      if (due === undefined) return false
      yield* attempt(deps, due)
      return true
    })

  return { deliverOnce: Effect.fn("WebhookDispatcher.deliverOnce")(deliverOnce), start: start(deps) } as const
})

export class WebhookDispatcher extends Context.Service<
  WebhookDispatcher,
  Effect.Success<typeof make>
>()("genjobs/WebhookDispatcher") {
  static readonly layer = Layer.effect(WebhookDispatcher, make)
}
