import { Effect, Option } from "effect"
import type { StoreError } from "../../domain/errors.js"
import type { ClaimLease, Job } from "../../domain/job.js"
import { candidateCounts, type LimitPlan, NO_LIMITS, pickWithinLimits, roomsOf } from "../../domain/providerLimits.js"
import type { JobDrivers } from "../../ports/JobLeaseDriver.js"
import type { ClaimOptions, JobRepo } from "../../ports/JobRepo.js"
import type { Endings } from "./endings.js"
import { claimOrder } from "../../domain/fairShare.js"

/**
 * Pending jobs of limited versions, in one transaction under the limits' lock: the room of
 * each scope counted from the jobs processing and the starts of the last minute, the first
 * candidates in claim order that fit taken, and their starts counted. Answers them, and whether
 * no job of a limited version was pending (known only when every one of them had room).
 */
const claimLimitedNow = ({ leases, store }: JobDrivers, plan: LimitPlan, limit: number, lease: ClaimLease, maxAttempts: number) =>
  store.transaction(Effect.gen(function*() {
    yield* leases.lockProviderLimits
    const usage = yield* leases.readLimitUsage(plan.versions, plan.scopes.map((scope) => scope.key), lease.now)
    const rooms = roomsOf(plan, usage)
    const counts = candidateCounts(plan, rooms, limit)
    if (counts.length === 0) return { claimed: [], noneWaiting: false }
    const candidates = [...(yield* leases.pendingOf(counts))].sort(claimOrder)
    // None waits only if every limited version's pending jobs were read: a version without room
    // was not, and may have some.
    if (candidates.length === 0) return { claimed: [], noneWaiting: counts.length === plan.versions.length }
    const { picked, starts } = pickWithinLimits(plan, rooms, candidates, limit)
    if (picked.length === 0) return { claimed: [], noneWaiting: false }
    const claimed = yield* leases.claimIds(picked.map((job) => job.id), { ...lease, maxAttempts, exclude: [] })
    yield* leases.recordStarts(starts, lease.now)
    return { claimed, noneWaiting: false }
  }))

/**
 * The limited claim of one repo. While the last one found no job of a limited version pending,
 * the next first asks whether one is (`anyPending`: one read, no lock) and skips the transaction
 * while none is: a catalog with a limited provider otherwise cost every claim, of any job, the
 * lock, the count of the jobs processing and the read of the pending ones (five round trips on
 * PostgreSQL). A job submitted meanwhile is found by that read, and claimed.
 */
export const makeLimitedClaims = (drivers: JobDrivers) => {
  let noneWaiting = false
  return (plan: LimitPlan, limit: number, lease: ClaimLease, maxAttempts: number): Effect.Effect<ReadonlyArray<Job>, StoreError> =>
    Effect.gen(function*() {
      if (noneWaiting && !(yield* drivers.leases.anyPending(plan.versions))) return []
      const { claimed, noneWaiting: none } = yield* claimLimitedNow(drivers, plan, limit, lease, maxAttempts)
      noneWaiting = none
      return claimed
    })
}

export type LimitedClaims = ReturnType<typeof makeLimitedClaims>

/**
 * Limited versions' jobs within their room first, then the others, each in claim order
 * (fairShare.ts). A claim riding on completions (`besideEndings`) goes with the next batch of
 * them instead (endings.ts), for the unlimited versions' jobs only.
 */
export const claimBatch = (drivers: JobDrivers, limitedClaims: LimitedClaims, { claimBeside, claimed }: Endings): JobRepo["Service"]["claimBatch"] =>
(options) => {
  const { besideEndings } = options
  return besideEndings === undefined || options.limitedOnly === true
    ? Effect.map(claimNow(drivers, limitedClaims, options), (jobs) => {
      claimed(jobs)
      return jobs
    })
    : claimBeside({ ...options, besideEndings })
}

const claimNow = (
  drivers: JobDrivers,
  limitedClaims: LimitedClaims,
  { leaseMs, limit, limitedOnly, limits, maxAttempts, now, workerId }: ClaimOptions & { readonly limit: number }
) =>
  Effect.gen(function*() {
    if (limit < 1) return []
    const lease: ClaimLease = { now, leaseOwner: workerId, leaseExpiresAt: now + leaseMs }
    const plan = limits ?? NO_LIMITS
    const limited = plan.versions.length === 0 ? [] : yield* limitedClaims(plan, limit, lease, maxAttempts)
    const rest = limit - limited.length
    const others = rest < 1 || limitedOnly === true
      ? []
      // One atomic statement of its own: no transaction around it (two round trips fewer on PostgreSQL).
        : yield* drivers.leases.claimBatch({ ...lease, limit: rest, maxAttempts, exclude: plan.versions })
    return [...limited, ...others].sort(claimOrder)
  })

export const claim = (drivers: JobDrivers, limitedClaims: LimitedClaims): JobRepo["Service"]["claim"] => ({ besideEndings: _, ...options }) =>
  Effect.map(claimNow(drivers, limitedClaims, { ...options, limit: 1 }), (jobs) => Option.fromNullishOr(jobs[0]))

/** The named jobs a broker delivered, claimed if still runnable; limited versions are left to claimBatch. */
export const claimIds = ({ leases }: JobDrivers, { claimed }: Endings): JobRepo["Service"]["claimIds"] =>
(ids, { leaseMs, limits, maxAttempts, now, workerId }) =>
  Effect.map(
    leases.claimIds(ids, { now, leaseOwner: workerId, leaseExpiresAt: now + leaseMs, maxAttempts, exclude: (limits ?? NO_LIMITS).versions }),
    (jobs) => {
      claimed(jobs)
      return [...jobs].sort(claimOrder)
    }
  )
