/** When a provider credential's circuit opens and how long it stays open before a probe. */
export interface CircuitSettings {
  /** Consecutive failures that open it. */
  readonly failures: number
  /** How long it stays open before one probe is let through. */
  readonly pauseMs: number
}

/**
 * The health of one provider credential. `closed`: calls go through, counting failures in a
 * row. `open` (since `openedAt`): route and credential selection skip it. `half_open`: one probe
 * was let through at `probeAt`; its success closes the circuit, its failure opens it again.
 */
export type Circuit =
  | { readonly state: "closed"; readonly failures: number }
  | { readonly state: "open"; readonly failures: number; readonly openedAt: number }
  | { readonly state: "half_open"; readonly failures: number; readonly openedAt: number; readonly probeAt: number }

export const closedCircuit: Circuit = { state: "closed", failures: 0 }

/**
 * Whether a call may go through now. A probe whose outcome never came (its run was stopped)
 * counts as failed once another pause has passed, so a circuit never stays half open.
 */
export const isAvailable = (circuit: Circuit, now: number, settings: CircuitSettings): boolean =>
  circuit.state === "closed"
    ? true
    : circuit.state === "open"
    ? now >= circuit.openedAt + settings.pauseMs
    : now >= circuit.probeAt + settings.pauseMs

/** The circuit once a call was let through: an open circuit whose pause is over sends it as its probe. */
export const afterAdmit = (circuit: Circuit, now: number): Circuit =>
  circuit.state === "closed" ? circuit : { state: "half_open", failures: circuit.failures, openedAt: circuit.openedAt, probeAt: now }

/** A call succeeded (or the provider answered that the request itself was wrong): the circuit closes. */
export const afterSuccess = (_circuit: Circuit): Circuit => closedCircuit

/** A call failed: the `failures`-th in a row opens the circuit; a failed probe opens it again. */
export const afterFailure = (circuit: Circuit, now: number, settings: CircuitSettings): Circuit => {
  const failures = circuit.failures + 1
  if (circuit.state === "closed") return failures >= settings.failures ? { state: "open", failures, openedAt: now } : { state: "closed", failures }
  if (circuit.state === "half_open") return { state: "open", failures, openedAt: now }
  return { ...circuit, failures }
}
