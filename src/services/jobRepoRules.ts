import { Effect, type Scope } from "effect"
import type { JobDrivers } from "../ports/JobLeaseDriver.js"
import type { JobRepo } from "../ports/JobRepo.js"
import { claim, claimBatch, claimIds, makeLimitedClaims } from "./jobRepo/claims.js"
import { cancel, fail, makeEndings, makeSaveProviderState } from "./jobRepo/endings.js"
import { queueGaps, reap } from "./jobRepo/passes.js"
import { submit } from "./jobRepo/submit.js"

/**
 * The job repository over any store's drivers: every job rule lives here, once for all stores,
 * each under jobRepo/ (submit, claims, endings, the reaper's and relay's passes, and `move`, the
 * state machine's writes). `store` keeps jobs, money and webhook rows; `leases` is the store's own queue.
 */
/** A hand-back of leases (JobLeaseDriver.handBackLeases) in the store's transaction, as renewals are. */
const handBack = (store: JobDrivers["store"], write: NonNullable<JobDrivers["leases"]["handBackLeases"]>): NonNullable<JobRepo["Service"]["handBackLeases"]> =>
  (held, now) => (held.length === 0 ? Effect.succeed([]) : store.transaction(write(held, now)))

/** Claimed jobs never started put back in the queue (JobLeaseDriver.returnUnstarted), in the store's transaction. */
const returnUnstarted = (store: JobDrivers["store"], write: NonNullable<JobDrivers["leases"]["returnUnstarted"]>): NonNullable<JobRepo["Service"]["returnUnstarted"]> =>
  (held) => (held.length === 0 ? Effect.succeed([]) : store.transaction(write(held)))

export const makeJobRepo = (drivers: JobDrivers): Effect.Effect<JobRepo["Service"], never, Scope.Scope> =>
  Effect.gen(function*() {
    const { leases, store } = drivers
    const endings = yield* makeEndings(drivers)
    const limitedClaims = makeLimitedClaims(drivers)
    return {
      submit: submit(store),
      get: store.getJob,
      getMany: store.getJobs,
      list: store.listJobs,
      cancel: cancel(store),
      claim: claim(drivers, limitedClaims),
      claimBatch: claimBatch(drivers, limitedClaims, endings),
      claimIds: claimIds(drivers, endings),
      queueGaps: queueGaps(drivers),
      reap: reap(drivers),
      renewLeases: (held, now, leaseMs) =>
        held.length === 0 ? Effect.succeed([]) : store.transaction(leases.renewLeases(held, now, now + leaseMs)),
      ...(leases.handBackLeases === undefined ? {} : { handBackLeases: handBack(store, leases.handBackLeases) }),
      ...(leases.returnUnstarted === undefined ? {} : { returnUnstarted: returnUnstarted(store, leases.returnUnstarted) }),
      saveProviderState: yield* makeSaveProviderState(drivers),
      complete: endings.complete,
      fail: fail(store)
    } satisfies JobRepo["Service"]
  })
