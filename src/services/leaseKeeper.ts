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
 * Leases renewed by one store write. SQLite's write is a synchronous call on the event loop:
 * 10,000 leases in one UPDATE held it 90-150 ms (and its COMMIT 50-60 ms more) every tick, which
 * no poll or timer of the process could interrupt; 500 are about 5 ms of CPU.
 */
export const RENEWAL_CHUNK = 500

/**
 * One renewal loop for every lease a process holds: each tick (a third of the lease) renews them
 * all in writes of `RENEWAL_CHUNK` leases, one after the other with a turn of the event loop
 * between them, so thousands of running jobs cost a few statements per tick, not one each.
 * A failed renewal does not count as held: a lease is lost once its last known end passes; a
 * failed write loses only its own leases.
 */
export const makeLeaseKeeper: Effect.Effect<LeaseKeeper, never, JobRepo | EngineConfig | Scope.Scope> = Effect.gen(function*() {
  const repo = yield* JobRepo
  const config = yield* EngineConfig
  const held = new Set<Lease>()
  const interval = Math.max(1, Math.floor(config.leaseMs / 3))

  /**
   * Renews `leases` in one write; false when the write failed. It may wait for a store
   * connection as long as none of them would have ended meanwhile: behind thousands of job runs'
   * writes a renewal cut off after one interval would give up its place in the pool's queue at
   * every tick and never be served.
   */
  const renew = Effect.fnUntraced(function*(leases: ReadonlyArray<Lease>, now: number) {
    const budget = Math.max(interval, Math.min(...leases.map((lease) => lease.expiresAt)) - now)
    const exit = yield* Effect.exit(
      repo.renewLeases(leases.map(({ id, workerId }) => ({ id, workerId })), now, config.leaseMs).pipe(Effect.timeout(Duration.millis(budget)))
    )
    if (Exit.isFailure(exit)) {
      yield* Effect.logWarning("could not renew job leases", Cause.pretty(exit.cause))
      return false
    }
    const renewed = new Set(exit.value)
    for (const lease of leases) {
      // Renewals overlap when the store is slow: an older one answering last never shortens what a newer one knew.
      if (renewed.has(lease.id)) lease.expiresAt = Math.max(lease.expiresAt, now + config.leaseMs)
      else lose(lease)
    }
    return true
  })

  /**
   * Renews `leases` a chunk at a time. `Effect.yieldNow` gives the event loop its turn between
   * chunks: on SQLite each is a synchronous call, and a fiber's statements would otherwise run
   * back to back within one turn (a fiber yields only every couple of thousand operations). A
   * failed write ends the tick's renewal: the chunks after it would wait behind the same fault,
   * and the next tick tries them all again. Meanwhile a lease is lost once its last known end passes.
   */
  const renewAll = Effect.fnUntraced(function*(leases: ReadonlyArray<Lease>) {
    for (let from = 0; from < leases.length; from += RENEWAL_CHUNK) {
      if (from > 0) yield* Effect.yieldNow
      if (yield* renew(leases.slice(from, from + RENEWAL_CHUNK), yield* Clock.currentTimeMillis)) continue
      const after = yield* Clock.currentTimeMillis
      for (let i = from; i < leases.length; i++) if (after >= leases[i]!.expiresAt) lose(leases[i]!)
      return
    }
  })

  // Each tick renews what is held then, without waiting for an earlier renewal still queued.
  const tick = Effect.gen(function*() {
    const leases = [...held].filter((lease) => !lease.lost)
    if (leases.length === 0) return
    yield* Effect.forkChild(renewAll(leases))
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
