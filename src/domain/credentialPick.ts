/** A provider credential the engine may start a job with: its id (never the secret) and how it is loaded. */
export interface CredentialLoad {
  readonly id: string
  /** Its share of the work relative to the provider's other credentials; 1 when not given. */
  readonly weight: number
  /** Generations this process follows on it now. */
  readonly inFlight: number
}

/**
 * The credential a new start takes, among those whose circuit lets it through: the least
 * loaded for its weight (in flight divided by weight, counting the new start), the first listed
 * on a tie. Undefined when none is given.
 */
export const pickCredential = (candidates: ReadonlyArray<CredentialLoad>): CredentialLoad | undefined => {
  let best: CredentialLoad | undefined
  const load = (c: CredentialLoad) => (c.inFlight + 1) / c.weight
  for (const candidate of candidates) if (best === undefined || load(candidate) < load(best)) best = candidate
  return best
}
