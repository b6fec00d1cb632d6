import { Effect, Option } from "effect"
import { failureOf } from "../../domain/failureTaxonomy.js"
import type { JobDrivers } from "../../ports/JobLeaseDriver.js"
import type { JobRepo } from "../../ports/JobRepo.js"
import { move, releasedLease } from "./move.js"

/** The error of a job whose workers stopped responding (the reaper's): the engine's failure, a later submit likely fine. */
export const ABANDONED = failureOf("INTERNAL_ERROR", "The job's workers stopped responding; its cost was refunded", {
  _tag: "Engine",
  reason: "abandoned"
})

/** The name of the reaper's pass lease. */
const REAPER = "jobs-reaper"

/** The name of the queue relay's pass lease. */
const RELAY = "queue-relay"

/** Job ends one reaper pass folds into their accounts' counts at most; submits fold their own meanwhile. */
const FOLD_LIMIT = 10_000

/** The queue relay's pass, for the process that holds (or takes) its lease: what the broker may have lost. */
export const queueGaps = ({ leases, store }: JobDrivers): JobRepo["Service"]["queueGaps"] =>
({ after, graceMs, limit, maxAttempts, now, passMs, workerId }) =>
  store.transaction(Effect.gen(function*() {
    if (!(yield* leases.takeLease(RELAY, workerId, now, now + passMs))) return Option.none()
    return Option.some(yield* leases.queueGaps({ now, graceMs, after, maxAttempts, limit }))
  }))

/** The reaper's pass, for the process that holds (or takes) its lease: fails jobs out of attempts, refunded. */
export const reap = ({ leases, store }: JobDrivers): JobRepo["Service"]["reap"] => ({ limit, maxAttempts, now, passMs, workerId }) =>
  Effect.gen(function*() {
    const pass = yield* store.transaction(Effect.gen(function*() {
      if (!(yield* leases.takeLease(REAPER, workerId, now, now + passMs))) return Option.none<number>()
      let abandoned = 0
      for (const job of yield* leases.findExhausted(now, maxAttempts, limit)) {
        const moved = yield* move(store, job, "Abandon", { error: ABANDONED, completedAt: now, ...releasedLease }, now)
        if (Option.isSome(moved)) abandoned++
      }
      yield* leases.pruneWindows(now)
      return Option.some(abandoned)
    }))
    if (Option.isNone(pass)) return 0
    // A statement of its own, still under the pass's lease: whatever it meets (a deadlock
    // with a host's bulk insert, say), the pass's abandonments stand, and the next pass folds.
    yield* leases.foldJobEnds(FOLD_LIMIT).pipe(
      Effect.catch((error) => Effect.logWarning("job ends could not be folded into their accounts' counts", error.message))
    )
    return pass.value
  })
