import { Effect, Layer, Metric } from "effect"
import { ProviderHealth } from "../services/ProviderHealth.js"
import { providerFailuresOf, providerFallbacksOf, providerStartsOf, providerStartsUnconfirmedOf } from "./metricSeries.js"

/** ProviderHealth, counted: starts, unconfirmed starts and fallbacks per provider, failures per provider and credential. */
export const observeProviderHealth = (health: ProviderHealth["Service"]): ProviderHealth["Service"] => ({
  ...health,
  started: (providerId) => Effect.andThen(health.started(providerId), Metric.update(providerStartsOf(providerId), 1)),
  unconfirmed: (providerId) => Effect.andThen(health.unconfirmed(providerId), Metric.update(providerStartsUnconfirmedOf(providerId), 1)),
  fellBack: (providerId) => Effect.andThen(health.fellBack(providerId), Metric.update(providerFallbacksOf(providerId), 1)),
  record: (providerId, credentialId, failed) =>
    failed
      ? Effect.andThen(health.record(providerId, credentialId, failed), Metric.update(providerFailuresOf(providerId, credentialId), 1))
      : health.record(providerId, credentialId, failed)
})

export const layerObservedProviderHealth = Layer.effect(ProviderHealth, Effect.map(ProviderHealth, observeProviderHealth))
