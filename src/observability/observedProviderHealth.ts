import { Effect, Layer, Metric } from "effect"
import { ProviderHealth } from "../services/ProviderHealth.js"
import { providerFailuresOf, providerFallbacksOf, providerStartsOf, providerStartsUnconfirmedOf } from "./metricSeries.js"

/** ProviderHealth, counted: starts, unconfirmed starts and fallbacks per provider, failures per provider and credential. */
export const observeProviderHealth = (health: ProviderHealth["Type"]): ProviderHealth["Type"] => ({
  ...health,
  started: (providerId) => Effect.zipRight(health.started(providerId), Metric.increment(providerStartsOf(providerId))),
  unconfirmed: (providerId) => Effect.zipRight(health.unconfirmed(providerId), Metric.increment(providerStartsUnconfirmedOf(providerId))),
  fellBack: (providerId) => Effect.zipRight(health.fellBack(providerId), Metric.increment(providerFallbacksOf(providerId))),
  record: (providerId, credentialId, failed) =>
    failed
      ? Effect.zipRight(health.record(providerId, credentialId, failed), Metric.increment(providerFailuresOf(providerId, credentialId)))
      : health.record(providerId, credentialId, failed)
})

export const layerObservedProviderHealth = Layer.effect(ProviderHealth, Effect.map(ProviderHealth, observeProviderHealth))
