import { Cause, Clock, Duration, Effect, Exit, type Scope } from "effect"
import type { JobId } from "../domain/ids.js"
import { JobRepo } from "../ports/JobRepo.js"
import { EngineConfig } from "./EngineConfig.js"

/**
 * One job's lease as this process holds it: a record the keeper renews, not a fiber. The
 * run's steps read `lost` (the store's conditional writes refuse a lost lease anyway); a step
 * that waits (a poll's interval) sets `onLost` to be woken when it is lost.
 */
export interface Lease {
  readonly id: JobId
  readonly workerId: string
  /** The lease's end as this process last knew it, on this process's clock; conservative (measured before the write). */
  expiresAt: number
  /** Set once another worker took the lease, or renewals kept failing until its last known end passed. */
  lost: boolean
  /** Called once, when the lease is lost. */
  onLost: (() => void) | undefined
}

export interface LeaseKeeper {
  /** Keeps the job's lease renewed until `release`; `expiresAt` is the lease's end on this process's clock. Synchronous. */
  readonly hold: (id: JobId, workerId: string, expiresAt: number) => Lease
  /** Stops renewing the lease (the run ended). Synchronous; a second call does nothing. */
  readonly release: (lease: Lease) => void
}

/** Marks the lease lost and wakes whatever waits on it. */
const lose = (lease: Lease) => {
  if (lease.lost) return
  lease.lost = true
  const wake = lease.onLost
  lease.onLost = undefined
  wake?.()
}

/**
 * One renewal loop for every lease a process holds: each tick (a third of the lease) renews them
 * all in one store write, so thousands of running jobs cost one statement per tick, not one each.
 * A failed renewal does not count as held: a lease is lost once its last known end passes.
 */
export const makeLeaseKeeper: Effect.Effect<LeaseKeeper, never, JobRepo | EngineConfig | Scope.Scope> = Effect.gen(function*() {
  const repo = yield* JobRepo
  const config = yield* EngineConfig
  const held = new Set<Lease>()
  const interval = Math.max(1, Math.floor(config.leaseMs / 3))

  /**
   * Renews `leases` in one write. It may wait for a store connection as long as none of them
   * would have ended meanwhile: behind thousands of job runs' writes a renewal cut off after one
   * interval would give up its place in the pool's queue at every tick and never be served.
   */
  const renew = Effect.fnUntraced(function*(leases: ReadonlyArray<Lease>, now: number) {
    const budget = Math.max(interval, Math.min(...leases.map((lease) => lease.expiresAt)) - now)
    const exit = yield* Effect.exit(
      repo.renewLeases(leases.map(({ id, workerId }) => ({ id, workerId })), now, config.leaseMs).pipe(Effect.timeout(Duration.millis(budget)))
    )
    if (Exit.isSuccess(exit)) {
      const renewed = new Set(exit.value)
      for (const lease of leases) {
        // Renewals overlap when the store is slow: an older one answering last never shortens what a newer one knew.
        if (renewed.has(lease.id)) lease.expiresAt = Math.max(lease.expiresAt, now + config.leaseMs)
        else lose(lease)
      }
      return
    }
    yield* Effect.logWarning("could not renew job leases", Cause.pretty(exit.cause))
    const after = yield* Clock.currentTimeMillis
    for (const lease of leases) if (after >= lease.expiresAt) lose(lease)
  })

  // Each tick renews what is held then, without waiting for an earlier renewal still queued.
  const tick = Effect.gen(function*() {
    const leases = [...held].filter((lease) => !lease.lost)
    if (leases.length === 0) return
    yield* Effect.forkChild(renew(leases, yield* Clock.currentTimeMillis))
  })
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(Duration.millis(interval)), tick)))

  return {
    hold: (id, workerId, expiresAt) => {
      const lease: Lease = { id, workerId, expiresAt, lost: false, onLost: undefined }
      held.add(lease)
      return lease
    },
    release: (lease) => {
      held.delete(lease)
      lease.onLost = undefined
    }
  }
})
