import { Context, Effect, Layer, Option, type Scope } from "effect"
import type { Job } from "../domain/job.js"
import type { HandOffLease } from "../ports/JobRepo.js"

/** An idle worker fiber of this process, set aside for one job about to be submitted. */
export interface WorkerSlot {
  readonly lease: HandOffLease
  /** Runs the job the store wrote as this slot's claim. */
  readonly run: (job: Job) => Effect.Effect<void>
  /** Gives the slot back: the job was queued, refused or not written. */
  readonly release: Effect.Effect<void>
}

export type ReserveSlot = (job: Job) => Effect.Effect<Option.Option<WorkerSlot>>

/**
 * Between Jobs and the Worker of one process. A submit may hand its job to an idle worker here,
 * written by the store as that worker's claim: no wake-up and no claim round trip before the
 * provider is called. Empty until a Worker starts in this process, so API-only processes queue
 * every job.
 */
export class LocalWorkers extends Context.Service<LocalWorkers, {
  /** An idle local worker for `job`, or None. */
  readonly reserve: ReserveSlot
  /** A started Worker offers its idle fibers for as long as the scope is open. */
  readonly offer: (reserve: ReserveSlot) => Effect.Effect<void, never, Scope.Scope>
}>()("genjobs/LocalWorkers") {
  static readonly layer = Layer.sync(LocalWorkers, () => {
    const offers = new Set<ReserveSlot>()
    const reserveFrom = (remaining: ReadonlyArray<ReserveSlot>, job: Job): Effect.Effect<Option.Option<WorkerSlot>> => {
      const [first, ...rest] = remaining
      if (first === undefined) return Effect.succeed(Option.none())
      return Effect.flatMap(first(job), (slot) => (Option.isSome(slot) ? Effect.succeed(slot) : reserveFrom(rest, job)))
    }
    return {
      reserve: (job) => Effect.suspend(() => reserveFrom([...offers], job)),
      offer: (reserve) =>
        Effect.acquireRelease(Effect.sync(() => offers.add(reserve)), () => Effect.sync(() => offers.delete(reserve))).pipe(Effect.asVoid)
    }
  })
}
