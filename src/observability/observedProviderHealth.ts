import { Effect, Layer, type Metric } from "effect"
import { ProviderHealth } from "../services/ProviderHealth.js"
import { providerFailuresOf, providerFallbacksOf, providerStartsOf, providerStartsUnconfirmedOf } from "./metricSeries.js"

/** One count added to `metric`, in one Effect step (Metric.update is three): a start counts on every job. */
const countOne = (metric: Metric.Metric<number, unknown>): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    metric.updateUnsafe(1, fiber.context)
    return Effect.void
  })

/**
 * ProviderHealth, counted: starts, unconfirmed starts and fallbacks per provider, failures per
 * provider and credential. ProviderHealth's own hooks for these do nothing (they are for the
 * metrics), so they are replaced, not wrapped.
 */
export const observeProviderHealth = (health: ProviderHealth["Service"]): ProviderHealth["Service"] => ({
  ...health,
  started: (providerId, call) =>
    Effect.withFiber((fiber) => {
      providerStartsOf(providerId).updateUnsafe(1, fiber.context)
      return call
    }),
  unconfirmed: (providerId) => countOne(providerStartsUnconfirmedOf(providerId)),
  fellBack: (providerId) => countOne(providerFallbacksOf(providerId)),
  failed: (providerId, credentialId) => Effect.andThen(health.failed(providerId, credentialId), countOne(providerFailuresOf(providerId, credentialId)))
})

export const layerObservedProviderHealth = Layer.effect(ProviderHealth, Effect.map(ProviderHealth, observeProviderHealth))
