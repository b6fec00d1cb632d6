import { Cause, Effect, Queue } from "effect"
import type { LeaseKeeper } from "../leaseKeeper.js"
import type { BrokerClaims } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import type { WorkerPool } from "./pool.js"
import { runJob } from "./runJob.js"

/** One runner fiber: takes claimed jobs from the pool's buffer and runs them, one at a time, for good. */
export const runner = (deps: WorkerDeps, pool: WorkerPool, keeper: LeaseKeeper, broker: BrokerClaims | undefined) =>
  Effect.forever(
    Queue.take(pool.buffer).pipe(
      Effect.flatMap(({ job, leaseExpiresAt }) =>
        runJob(deps, job, job.leaseOwner!, leaseExpiresAt, keeper).pipe(
          Effect.ensuring(deps.limits.isLimited(job) ? Queue.offer(pool.roomFreed, undefined) : Effect.void),
          Effect.ensuring(broker === undefined ? Effect.void : broker.done(job.id)),
          // A runner outlives any one job: a store error that outlasted the retries leaves the
          // job to its lease (another worker resumes it), never a runner gone for good.
          Effect.catchAllCause((cause) =>
            Cause.isInterruptedOnly(cause)
              ? Effect.failCause(cause)
              : Effect.logError("a job run ended with an error; the job is retried once its lease expires", { jobId: job.id }, Cause.pretty(cause))
          )
        )),
      Effect.ensuring(pool.fiberFreed)
    )
  )
