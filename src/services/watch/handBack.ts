import { Cause, Clock, Effect, Exit, Queue } from "effect"
import type { JobId } from "../../domain/ids.js"
import type { JobRepo } from "../../ports/JobRepo.js"
import { type LeaseKeeper, RENEWAL_CHUNK } from "../leaseKeeper.js"
import { handedBack } from "./generation.js"
import type { Watch, Watcher } from "./watcher.js"

/** Leases handed back by one store write: as many as a renewal's, for the same reason (leaseKeeper.ts). */
export const HAND_BACK_CHUNK = RENEWAL_CHUNK

export interface HandBackDeps {
  /** The store's hand-back (JobRepo.handBackLeases). */
  readonly handBackLeases: NonNullable<JobRepo["Service"]["handBackLeases"]>
  readonly keeper: LeaseKeeper
  /** Called with each chunk's jobs handed back, after the write (a broker publishes them again). */
  readonly handedBack?: ((watches: ReadonlyArray<Watch>) => Effect.Effect<void>) | undefined
}

/**
 * Hands back one chunk: the leases leave the keeper first (a renewal racing the write would
 * only be refused), then one store write gives back those whose handle is stored. A lease the
 * write did not take (lost meanwhile) or could not (the store failed) is left to expire, as a
 * run cut off by the drain's end is: the job is resumed then.
 */
const handBackChunk = (deps: HandBackDeps, chunk: ReadonlyArray<Watch>) =>
  Effect.gen(function*() {
    for (const watch of chunk) deps.keeper.release(watch.lease)
    const now = yield* Clock.currentTimeMillis
    const written = yield* Effect.exit(deps.handBackLeases(chunk.map(({ lease }) => ({ id: lease.id, workerId: lease.workerId })), now))
    if (Exit.isFailure(written)) {
      yield* Effect.logWarning(`could not hand back ${chunk.length} job leases; their jobs are resumed once the leases expire`, Cause.pretty(written.cause))
    }
    const back = new Set<JobId>(Exit.isSuccess(written) ? written.value : [])
    if (back.size > 0) yield* Effect.logInfo(`handed back ${back.size} job leases of started generations, for another worker to resume`)
    const resumable = chunk.filter((watch) => back.has(watch.lease.id))
    if (resumable.length > 0 && deps.handedBack !== undefined) yield* deps.handedBack(resumable)
    // Each run ends as handed back: its runner releases what it held (its slot, its generation
    // counted in flight on its credential; with a broker, its delivery), as any run's end does.
    for (const watch of chunk) watch.ended(handedBack)
  })

/**
 * A stopping worker's started generations, handed back instead of waited for: each has its
 * provider handle stored, so whoever claims the job next resumes polling it (no second start),
 * and nothing of it is lost by leaving this process. Takes every generation off the watch list,
 * and every one that joins it from now on (a run that was inside its start), and hands their
 * leases back in writes of HAND_BACK_CHUNK, one after the other. Runs until interrupted: the
 * worker's drain runs it beside its wait for the runs still before or inside their start.
 */
export const handBackWatched = (watcher: Watcher, deps: HandBackDeps): Effect.Effect<never> =>
  Effect.gen(function*() {
    const watches = yield* Queue.unbounded<Watch>()
    watcher.handOver((watch) => Queue.offerUnsafe(watches, watch))
    return yield* Effect.forever(Effect.flatMap(Queue.takeBetween(watches, 1, HAND_BACK_CHUNK), (chunk) => handBackChunk(deps, chunk)))
  })
