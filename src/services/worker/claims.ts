import { Clock, Effect, Option } from "effect"
import type { QueueError, StoreError } from "../../domain/errors.js"
import { type Job, startMarkedByClaim } from "../../domain/job.js"
import type { makeBrokerClaims } from "../brokerClaims.js"
import type { ClaimRider, RiderOutcome } from "../../ports/JobRepo.js"
import type { WorkerDeps } from "./deps.js"
import { startOnIdle, type WorkerPool } from "./pool.js"

/** A claimed job, with its lease's end on this process's clock. */
export interface Claimed {
  readonly job: Job
  readonly leaseExpiresAt: number
  /** Claimed ahead of the free fibers: it waits in the ready list for one, holding none. */
  readonly ahead?: true
}

export type BrokerClaims = Effect.Success<ReturnType<typeof makeBrokerClaims>>

/** Claims up to `limit` jobs from the store; each lease's end measured before the claim, so never late. */
export const claimUpTo = Effect.fnUntraced(function*(
  { config, limits, repo }: Pick<WorkerDeps, "config" | "limits" | "repo">,
  workerId: string,
  limit: number
): Effect.fn.Return<Array<Claimed>, StoreError> {
  const plan = yield* limits.current
  const now = yield* Clock.currentTimeMillis
  const jobs = yield* repo.claimBatch({ workerId, now, leaseMs: config.leaseMs, maxAttempts: config.maxAttempts, limit, limits: plan })
  return jobs.map((job) => ({ job, leaseExpiresAt: now + config.leaseMs }))
})

/**
 * Up to `limit` jobs for the new lease owner `workerId`. From a broker: limited versions'
 * pending jobs from the store (their room is counted there), the rest from the broker's
 * deliveries, waiting up to `waitMs` for one. From the store: one claim, no wait.
 */
export const claimFor = Effect.fnUntraced(function*(
  deps: Pick<WorkerDeps, "config" | "limits" | "repo">,
  broker: BrokerClaims | undefined,
  workerId: string,
  limit: number,
  waitMs: number
): Effect.fn.Return<ReadonlyArray<Claimed>, StoreError | QueueError> {
  if (broker === undefined) return yield* claimUpTo(deps, workerId, limit)
  const { config, limits, repo } = deps
  const plan = yield* limits.current
  const options = { workerId, leaseMs: config.leaseMs, maxAttempts: config.maxAttempts, limits: plan }
  const limitedAt = yield* Clock.currentTimeMillis
  const limited = plan.versions.length === 0 ? [] : yield* repo.claimBatch({ ...options, now: limitedAt, limit, limitedOnly: true })
  const rest = limit - limited.length
  // The claim's time is read after the wait for a delivery (up to waitMs): it starts the
  // lease and the job's startedAt.
  let deliveredAt = limitedAt
  const delivered = rest < 1 ? [] : yield* broker.take(
    rest,
    limited.length > 0 ? 0 : waitMs,
    (ids) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        deliveredAt = now
        return repo.claimIds(ids, { ...options, now })
      }),
    (ids) => Effect.map(repo.getMany(ids), (jobs) => new Set(jobs.filter((job) => job.status === "processing").map((job) => job.id)))
  ).pipe(
    // What the limited claim took is this worker's now: a broker or store fault after it must
    // not leave those jobs under a lease no run holds (each would cost an attempt, and a first
    // pickup's start mark would read as a lost start).
    Effect.catch((error) =>
      limited.length === 0
        ? Effect.fail(error)
        : Effect.as(Effect.logWarning("worker could not take queue deliveries; running the jobs claimed so far", error.message), []))
  )
  return [
    ...limited.map((job) => ({ job, leaseExpiresAt: limitedAt + config.leaseMs })),
    ...delivered.map((job) => ({ job, leaseExpiresAt: deliveredAt + config.leaseMs }))
  ]
})

/** A claimer's claim riding on its fibers' completions (ClaimRider), and how its last claim went. */
export interface WorkerRider {
  readonly rider: ClaimRider
  /**
   * How the last claim went, taken once its call returned: its jobs as the intake takes them.
   * None when the store did not settle it: the call failed before it reached the store, or was
   * `interrupted`; then the jobs of a claim already sent go to the intake when it settles,
   * without the claimer.
   */
  readonly collect: (interrupted: boolean) => Option.Option<{ readonly outcome: RiderOutcome; readonly claimed: ReadonlyArray<Claimed> }>
}

/**
 * The claimed jobs of a riding claim, as the intake takes them: their leases began at its time.
 * `slots` of them take the fibers the claim was for (those idle as it was sent, and those its
 * endings free); the rest were claimed ahead and wait in the ready list.
 */
export const riddenClaims = (leaseMs: number, outcome: RiderOutcome, jobs: ReadonlyArray<Job>, slots: number): ReadonlyArray<Claimed> =>
  aheadBeyond(jobs.map((job) => ({ job, leaseExpiresAt: outcome.at + leaseMs })), slots)

/**
 * Claimed jobs with those beyond the first `slots` marked as claimed ahead. Reclaims take the
 * slots first: only a first pickup nothing started can be put back in the queue at a drain.
 */
export const aheadBeyond = (claimed: ReadonlyArray<Claimed>, slots: number): ReadonlyArray<Claimed> => {
  if (claimed.length <= slots) return claimed
  const ordered = [...claimed.filter(({ job }) => !startMarkedByClaim(job)), ...claimed.filter(({ job }) => startMarkedByClaim(job))]
  return ordered.map((one, i) => (i < slots ? one : { ...one, ahead: true }))
}

/**
 * `limit`: the limit of every claim this rider rides with (claimBeside's); the store's `max` to
 * `takeIdle` is that less the fibers its endings free (src/services/jobRepo/endings.ts).
 */
export const makeWorkerRider = (pool: WorkerPool, leaseMs: number, limit: number): WorkerRider => {
  let last: { readonly outcome: RiderOutcome; readonly claimed: ReadonlyArray<Claimed> } | undefined
  let abandoned = false
  // The idle fibers the claim on its way took as it was sent.
  let takenIdle = 0
  const idle = pool.idle.ref
  /** The claim's jobs counted: the idle fibers it took and did not fill given back, those claimed ahead held. */
  const settle = (outcome: RiderOutcome, jobs: ReadonlyArray<Job>) => {
    // Claiming ahead, the fibers the endings free were given back as the completions were
    // written (runner.ts's Slot): the jobs claimed for them join the ready list instead.
    const slots = takenIdle + (pool.ahead > 0 ? 0 : Math.max(0, outcome.limit - outcome.fromIdle))
    const claimed = riddenClaims(leaseMs, outcome, jobs, slots)
    const started = Math.min(jobs.length, slots)
    idle.current += takenIdle - started
    pool.aheadHeld += jobs.length - started
    takenIdle = 0
    startOnIdle(pool)
    return claimed
  }
  return {
    rider: {
      frees: pool.owns,
      // The idle fibers, then `ahead` less the jobs claimed ahead already: the claim takes
      // `freed + idle + (ahead - ready)` (docs/decisions.md, "Claiming ahead on PostgreSQL"), the
      // store adding one job for each fiber the endings free (`limit - max` of them).
      // While runs are slow (WorkerPool.quick), nothing ahead: the claim takes the idle fibers
      // only. The fibers the endings free were given back as the completions were written: each
      // is idle (counted in `takenIdle`) or took a ready job, so the store's one job for each
      // ending is taken off, below 0 where they took ready jobs. The ready list then empties
      // as runs end instead of refilling at its size.
      takeIdle: (max) => {
        takenIdle = Math.max(0, Math.min(idle.current, max))
        idle.current -= takenIdle
        if (pool.ahead > 0 && !pool.quick) return takenIdle - (limit - max)
        return takenIdle + Math.max(0, Math.min(max - takenIdle, pool.ahead - pool.aheadHeld - (limit - max)))
      },
      waiting: (wake) => {
        pool.riderWake = wake
        // A fiber freed while the claim was on its way here would not wake it.
        if (wake !== undefined && idle.current > 0) wake()
      },
      settled: (outcome, jobs) => {
        const claimed = settle(outcome, jobs)
        if (!abandoned) return void (last = { outcome, claimed })
        abandoned = false
        pool.intake(claimed)
      }
    },
    collect: (interrupted) => {
      const got = last
      last = undefined
      if (got === undefined && interrupted) abandoned = true
      return Option.fromNullishOr(got)
    }
  }
}

/**
 * Up to `limit` jobs from the store for the fibers the next completion batch of this worker frees
 * and those idle then, in that batch's write (ClaimOptions.besideEndings); none when a fiber freed
 * otherwise woke it first.
 */
export const claimBeside = Effect.fnUntraced(function*(
  { config, limits, repo }: Pick<WorkerDeps, "config" | "limits" | "repo">,
  workerId: string,
  limit: number,
  rider: ClaimRider
): Effect.fn.Return<ReadonlyArray<Job>, StoreError> {
  const plan = yield* limits.current
  const now = yield* Clock.currentTimeMillis
  return yield* repo.claimBatch({ workerId, now, leaseMs: config.leaseMs, maxAttempts: config.maxAttempts, limit, limits: plan, besideEndings: rider })
})
