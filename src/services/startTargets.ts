import type { EffectiveRoute } from "../domain/catalog.js"
import { type CredentialLoad, pickCredential } from "../domain/credentialPick.js"
import type { GenerationProvider } from "../ports/Provider.js"
import { DEFAULT_CREDENTIAL, type ProviderHealth } from "./ProviderHealth.js"

/** A route whose provider is registered, ready to be asked. */
export interface Registered {
  readonly route: EffectiveRoute
  readonly provider: GenerationProvider
}

/** A route of a pass with the credential its start takes. */
export interface Target {
  readonly registered: Registered
  /** The credential's key in ProviderHealth (DEFAULT_CREDENTIAL for a provider that lists none). */
  readonly healthKey: string
  /** The credential the request names; undefined for a provider that lists none. */
  readonly credentialId: string | undefined
  /** Chosen among closed circuits: an open one past its pause must still admit the start. */
  readonly steered: boolean
}

/**
 * The credential a start on this route takes: weighted least in flight among those whose
 * circuit lets it through at `now` (all of them when `ignoreCircuits`); none when every one is
 * open. Synchronous: per route and per start it builds no Effect.
 */
const credentialFor = (health: ProviderHealth["Service"], registered: Registered, ignoreCircuits: boolean, now: number): Target | undefined => {
  const providerId = registered.route.providerId
  // A provider that lists no credentials (most) has one, the default: nothing to weigh.
  if (registered.provider.credentials === undefined) {
    return ignoreCircuits || health.available(providerId, DEFAULT_CREDENTIAL, now)
      ? { registered, healthKey: DEFAULT_CREDENTIAL, credentialId: undefined, steered: !ignoreCircuits }
      : undefined
  }
  const credentials = registered.provider.credentials
  const loads: Array<CredentialLoad> = []
  for (const { id, weight } of credentials) {
    if (ignoreCircuits || health.available(providerId, id, now)) loads.push({ id, weight, inFlight: health.inFlight(providerId, id) })
  }
  const picked = pickCredential(loads)
  return picked === undefined ? undefined : { registered, healthKey: picked.id, credentialId: picked.id, steered: !ignoreCircuits }
}

/** A pass's routes in order, each with its credential, and the routes passed over (each a fallback, for the metrics). */
export interface Targets {
  readonly targets: ReadonlyArray<Target>
  readonly passedOver: ReadonlyArray<Registered>
}

/**
 * The routes a pass over `usable` tries at `now`, in order, each with its credential: those
 * with a credential whose circuit lets the start through (the others are passed over: fallbacks).
 * A circuit steers starts away while another route can take them; when every one is open, every
 * route is tried as if closed, paced by the job's own retry and outage schedules rather than
 * held back. Synchronous, given the clock the start's step read.
 */
export const chooseTargets = (health: ProviderHealth["Service"], usable: ReadonlyArray<Registered>, now: number): Targets => {
  const steered: Array<Target> = []
  for (const registered of usable) {
    const target = credentialFor(health, registered, false, now)
    if (target !== undefined) steered.push(target)
  }
  if (steered.length > 0) {
    return {
      targets: steered,
      passedOver: steered.length === usable.length ? [] : usable.filter((registered) => !steered.some((s) => s.registered === registered))
    }
  }
  const all: Array<Target> = []
  for (const registered of usable) {
    const target = credentialFor(health, registered, true, now)
    if (target !== undefined) all.push(target)
  }
  return { targets: all, passedOver: [] }
}
