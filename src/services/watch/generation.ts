import { Schema } from "effect"
import { type FailureFact, failureOf } from "../../domain/failureTaxonomy.js"
import type { JobError } from "../../domain/job.js"
import type { ProviderRouteRef } from "../../domain/providerHandle.js"
import { factOfFailed, type ProviderOutput, type ProviderStatus } from "../../ports/Provider.js"

/**
 * How a job's generation ended, as far as the provider is concerned. `route` is the route of a
 * start sent without a handle being saved (it ended in its call, was refused, or was never
 * confirmed), for the job's end to record; a saved handle recorded its route already.
 */
export type Generation =
  | { readonly _tag: "Succeeded"; readonly outputs: ReadonlyArray<ProviderOutput>; readonly route?: ProviderRouteRef }
  | { readonly _tag: "Failed"; readonly error: JobError; readonly route?: ProviderRouteRef }

/** The worker no longer holds the job's lease: it must stop and write nothing more. */
export class Superseded extends Schema.TaggedError<Superseded>()("Superseded", {}) {}

/** The generation failed, as `fact` tells (classifyFailure gives its type). */
export const generationFailed = (message: string, fact: FailureFact): Generation => ({
  _tag: "Failed",
  error: failureOf("GENERATION_FAILED", message, fact)
})

export const ended = (status: Exclude<ProviderStatus, { readonly _tag: "Running" }>): Generation =>
  status._tag === "Succeeded" ? status : generationFailed(status.message, factOfFailed(status))

export const timedOut = (timeoutSeconds: number | undefined): Generation =>
  generationFailed(`The generation did not finish within ${timeoutSeconds} seconds; it was cancelled and its cost refunded`, { _tag: "Deadline" })

/**
 * A stopping worker gave the job's lease back with its handle stored (watch/handBack.ts): the
 * run writes nothing more and releases what it held, as any run's end does; whoever claims the
 * job next resumes polling it.
 */
export interface HandedBack {
  readonly _tag: "HandedBack"
}
export const handedBack: HandedBack = { _tag: "HandedBack" }

/** How a watched generation's wait ends for its run. */
export type WatchOutcome = Generation | Superseded | HandedBack

/** The generation was started (or found) and joined the watch list: its end comes later, through its run's `ended`. */
export interface Watching {
  readonly _tag: "Watching"
}
export const watching: Watching = { _tag: "Watching" }
