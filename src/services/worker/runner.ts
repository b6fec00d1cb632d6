import { Cause, Effect, Queue } from "effect"
import type { LeaseKeeper } from "../leaseKeeper.js"
import type { JobRunBook } from "../providerCalls.js"
import type { BrokerClaims, Claimed } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import type { WorkerPool } from "./pool.js"
import { runJob } from "./runJob.js"

/**
 * Runs one claimed job on the runner's own fiber: its lease and its generations in flight are
 * records (no fiber, race or scope of its own), released together by one `ensuring` when the
 * run ends, however it ends.
 */
const runClaimed = (deps: WorkerDeps, pool: WorkerPool, keeper: LeaseKeeper, broker: BrokerClaims | undefined) =>
  Effect.fnUntraced(function*({ job, leaseExpiresAt }: Claimed) {
    const book: JobRunBook = { lease: keeper.hold(job.id, job.leaseOwner!, leaseExpiresAt), holds: [] }
    const limited = deps.limits.isLimited(job)
    const released = Effect.suspend(() => {
      keeper.release(book.lease)
      for (const release of book.holds) release()
      // A limited job's end may free room for one waiting.
      if (limited) Queue.unsafeOffer(pool.roomFreed, undefined)
      return broker === undefined ? pool.fiberFreed : Effect.zipRight(broker.done(job.id), pool.fiberFreed)
    })
    yield* runJob(deps, job, book).pipe(
      // A runner outlives any one job: a store error that outlasted the retries leaves the
      // job to its lease (another worker resumes it), never a runner gone for good.
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logError("a job run ended with an error; the job is retried once its lease expires", { jobId: job.id }, Cause.pretty(cause))
      ),
      Effect.ensuring(released)
    )
  })

/** One runner fiber: takes claimed jobs from the pool's buffer and runs them, one at a time, for good. */
export const runner = (deps: WorkerDeps, pool: WorkerPool, keeper: LeaseKeeper, broker: BrokerClaims | undefined) => {
  const run = runClaimed(deps, pool, keeper, broker)
  return Effect.forever(Effect.flatMap(Queue.take(pool.buffer), run))
}
