import { Schema } from "effect"

/**
 * What the engine keeps with a job once its provider accepted the generation, committed before
 * the engine waits on it: enough for any worker in any process to follow the same generation
 * after a crash instead of paying for a second one. JSON only; never a credential.
 */
/**
 * Which of the version's routes and which provider credential a generation was started on,
 * kept with its handle so that every later poll, cancel and download, in any process, goes to
 * the same provider with the same credential. The credential by its id, never its secret.
 */
export const ProviderRouteRef = Schema.Struct({
  /** The route's position in the version's `routes` (0 for a version without routes). */
  index: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  providerId: Schema.String.check(Schema.isMinLength(1)),
  /** Absent for a provider that lists no credentials of its own. */
  credentialId: Schema.optional(Schema.String)
})
export type ProviderRouteRef = typeof ProviderRouteRef.Type

export const ProviderHandle = Schema.Struct({
  /** The provider's own id of the generation: a prediction id, a request id, a task id. */
  id: Schema.String.check(Schema.isMinLength(1)),
  /** Whatever else resuming needs (status and result URLs, the endpoint that was used). */
  data: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)),
  /** Set by the engine, not the adapter: absent on handles stored before routes existed (the version's first route then). */
  route: Schema.optional(ProviderRouteRef)
})
export type ProviderHandle = typeof ProviderHandle.Type

/**
 * Where a job's provider start stands. `starting` is committed before the engine asks the
 * provider to start, `started` (with the handle) right after it answered: a worker that finds
 * `starting` without a handle cannot tell whether the provider started, so it never starts again.
 */
export const ProviderPhase = Schema.Literals(["starting", "started"])
export type ProviderPhase = typeof ProviderPhase.Type

/** A job's provider bookkeeping, written only by the worker holding the job's lease. */
export interface ProviderState {
  readonly phase: ProviderPhase | null
  readonly handle: ProviderHandle | null
  /** Starts asked of the provider for this job, the refused ones included. */
  readonly starts: number
  /**
   * The route the job's start was sent on, recorded with `started` (Job.providerRoute). A route
   * once recorded never changes, so a state without one leaves the stored route as it is.
   */
  readonly route?: ProviderRouteRef
}
