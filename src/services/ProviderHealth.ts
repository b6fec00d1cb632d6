import { Clock, Context, Effect, Layer, Option } from "effect"
import { afterAdmit, afterFailure, afterSuccess, type Circuit, closedCircuit, isAvailable } from "../domain/circuit.js"
import { Providers } from "../ports/Provider.js"
import { EngineConfig } from "./EngineConfig.js"

/** The credential id shown for a provider that lists no credentials of its own. */
export const DEFAULT_CREDENTIAL = "default"

/** One provider credential's circuit, as the health endpoint shows it. */
export interface CredentialHealth {
  readonly providerId: string
  readonly credentialId: string
  readonly circuit: Circuit
  /** Generations this process follows on it now. */
  readonly inFlight: number
}

interface Entry {
  readonly circuit: Circuit
  readonly inFlight: number
}

/** A credential's entry as this process keeps it, changed in place. */
interface Tracked {
  readonly providerId: string
  readonly credentialId: string
  circuit: Circuit
  inFlight: number
}

/**
 * The health of each provider credential this process called: its circuit (see circuit.ts)
 * and its generations in flight. Per process, as the calls it counts are: a circuit opened
 * here does not stop another process's starts.
 */
export class ProviderHealth extends Context.Service<ProviderHealth, {
  /**
   * Whether a start may go to this credential at `now` (its circuit is closed, or its pause is
   * over). The reads and changes of a job's start are synchronous, given the clock its step read
   * once: a start pays no Effect step per credential.
   */
  readonly available: (providerId: string, credentialId: string, now: number) => boolean
  /** Lets a start through at `now`: false when another took the probe first. */
  readonly admit: (providerId: string, credentialId: string, now: number) => boolean
  /** A call succeeded (or its error does not count against the credential): the circuit closes. */
  readonly succeeded: (providerId: string, credentialId: string) => void
  /** A call failed in a way that counts towards opening the circuit (`countsAgainstHealth`); also counted in the metrics. */
  readonly failed: (providerId: string, credentialId: string) => Effect.Effect<void>
  readonly inFlight: (providerId: string, credentialId: string) => number
  /**
   * Counts a generation in flight on this credential until the answered release is called
   * (a second call does nothing). Synchronous: a job's run is counted without a scope.
   */
  readonly hold: (providerId: string, credentialId: string) => () => void
  /** A start moved on from this provider to the version's next route (for the metrics). */
  readonly fellBack: (providerId: string) => Effect.Effect<void>
  /**
   * A start sent to this provider: `call`, counted (for the metrics) as its first step, which
   * adds no step of its own to the start.
   */
  readonly started: <A, E, R>(providerId: string, call: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** A start that may have reached this provider was neither answered nor found there: its job failed with a refund (for the metrics). */
  readonly unconfirmed: (providerId: string) => Effect.Effect<void>
  /** Every registered provider's credentials and every credential called, by provider id and credential id. */
  readonly snapshot: Effect.Effect<ReadonlyArray<CredentialHealth>>
}>()("genjobs/ProviderHealth") {
  static readonly layer = Layer.effect(ProviderHealth, Effect.gen(function*() {
    const settings = (yield* EngineConfig).providerCircuit
    const providers = yield* Effect.serviceOption(Providers)
    const registered = Option.match(providers, {
      onNone: () => [],
      onSome: (p) =>
        (p.providerIds ?? []).flatMap((providerId) =>
          Option.match(p.forProvider(providerId), {
            onNone: () => [],
            onSome: (provider) => (provider.credentials?.map((c) => c.id) ?? [DEFAULT_CREDENTIAL]).map((credentialId) => ({ providerId, credentialId }))
          }))
    })
    // Plain synchronous bookkeeping, one record per credential changed in place: a job's start
    // pays no Ref, no Map copy and no key string per change.
    const byProvider = new Map<string, Map<string, Tracked>>()
    const trackedOf = (providerId: string, credentialId: string): Tracked => {
      let credentials = byProvider.get(providerId)
      if (credentials === undefined) byProvider.set(providerId, credentials = new Map())
      let tracked = credentials.get(credentialId)
      if (tracked === undefined) credentials.set(credentialId, tracked = { providerId, credentialId, circuit: closedCircuit, inFlight: 0 })
      return tracked
    }
    const entryOf = (providerId: string, credentialId: string): Entry =>
      byProvider.get(providerId)?.get(credentialId) ?? { circuit: closedCircuit, inFlight: 0 }
    return {
      available: (providerId, credentialId, now) => isAvailable(entryOf(providerId, credentialId).circuit, now, settings),
      admit: (providerId, credentialId, now) => {
        const tracked = trackedOf(providerId, credentialId)
        if (!isAvailable(tracked.circuit, now, settings)) return false
        tracked.circuit = afterAdmit(tracked.circuit, now)
        return true
      },
      succeeded: (providerId, credentialId) => {
        const tracked = trackedOf(providerId, credentialId)
        tracked.circuit = afterSuccess(tracked.circuit)
      },
      failed: (providerId, credentialId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const tracked = trackedOf(providerId, credentialId)
          tracked.circuit = afterFailure(tracked.circuit, now, settings)
        }),
      inFlight: (providerId, credentialId) => entryOf(providerId, credentialId).inFlight,
      hold: (providerId, credentialId) => {
        const tracked = trackedOf(providerId, credentialId)
        tracked.inFlight++
        let held = true
        return () => {
          if (!held) return
          held = false
          tracked.inFlight--
        }
      },
      fellBack: () => Effect.void,
      started: (_providerId, call) => call,
      unconfirmed: () => Effect.void,
      snapshot: Effect.sync(() =>
        [
          ...registered.filter(({ credentialId, providerId }) => byProvider.get(providerId)?.has(credentialId) !== true),
          ...[...byProvider.values()].flatMap((credentials) => [...credentials.values()])
        ]
          .map(({ credentialId, providerId }) => {
            const entry = entryOf(providerId, credentialId)
            return { providerId, credentialId, circuit: entry.circuit, inFlight: entry.inFlight }
          })
          .sort((a, b) => a.providerId.localeCompare(b.providerId) || a.credentialId.localeCompare(b.credentialId)))
    }
  }))
}
