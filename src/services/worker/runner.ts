import { Cause, Clock, Effect, Queue, Ref } from "effect"
import { heldJob } from "../../domain/heldJob.js"
import type { Job } from "../../domain/job.js"
import type { LeaseKeeper } from "../leaseKeeper.js"
import type { JobRunBook, WatchOutcome } from "../providerCalls.js"
import type { Watcher } from "../watch/watcher.js"
import type { BrokerClaims, Claimed } from "./claims.js"
import type { WorkerDeps } from "./deps.js"
import { startOnIdle, type WorkerPool } from "./pool.js"
import { endWatched, runJob } from "./runJob.js"

/**
 * Runner fibers of one started worker at most. A job waiting at its provider is on the watch
 * list, not on a runner, so a few runners serve any number of generations in flight
 * (`concurrency`, which counts held jobs); they bound only the starts, the output stores and
 * the ends in progress at once, a provider that answers in its start call among them.
 */
export const MAX_RUNNERS = 256

/** A job this process holds, from its claim until its end is written (or its lease lost). */
interface Held {
  readonly job: Job
  readonly book: JobRunBook
  readonly limited: boolean
}

/** A runner's work: a claimed job to run, or a watched job's generation that ended (`outcome`), to finish. */
interface Work {
  readonly held: Held
  readonly outcome?: WatchOutcome
}

/** What the runners of one started worker share. */
export type { Work }

export interface Runners {
  readonly work: Queue.Queue<Work>
  /**
   * Jobs claimed ahead of the free fibers (Claimed.ahead), their leases held: a fiber that frees
   * takes the first (WorkerPool.startReady) before it counts as idle; a drain puts them back in
   * the queue (start.ts).
   */
  readonly ready: Array<Work>
  readonly keeper: LeaseKeeper
  readonly watcher: Watcher
  readonly broker: BrokerClaims | undefined
}

/** Logs what a run left unhandled: a runner outlives any one job, and the job is left to its lease. */
const logged = <A>(fallback: A, job: Job) => <E>(run: Effect.Effect<A, E>): Effect.Effect<A, E> =>
  Effect.catchCause(run, (cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.failCause(cause)
      : Effect.as(Effect.logError("a job run ended with an error; the job is retried once its lease expires", { jobId: job.id }, Cause.pretty(cause)), fallback))

/**
 * Releases what the job held, in one go: its lease, its generations counted in flight, its slot
 * (unless `slot` gave it back as the run's end was written).
 */
const released = (pool: WorkerPool, { broker, keeper }: Runners, { book, job, limited }: Held, slot: Slot | undefined) =>
  Effect.suspend(() => {
    keeper.release(book.lease)
    for (const release of book.holds) release()
    // A limited job's end may free room for one waiting.
    if (limited) Queue.offerUnsafe(pool.roomFreed, undefined)
    if (slot !== undefined && slot.freed) {
      pool.writing -= 1
      // The drain waits for the completion's answer too.
      Queue.offerUnsafe(pool.freed, undefined)
      // A claim parked while this completion was on its way stayed parked for it: with fibers
      // idle and its batch gone, it is woken now (and claims on its own unless another
      // completion of this worker is on its way).
      if (pool.riderWake !== undefined && Ref.getUnsafe(pool.idle) > 0) pool.riderWake()
      return broker === undefined ? Effect.void : broker.done(job.id)
    }
    return broker === undefined ? pool.fiberFreed : Effect.andThen(broker.done(job.id), pool.fiberFreed)
  })

/**
 * A run's slot given back as its end is written (runJob's FreeSlot), where the worker claims
 * ahead: the write waits for its completion batch, and the slot takes a ready job meanwhile, so
 * the batch ends jobs while the next ones run (docs/decisions.md, "Claiming ahead on PostgreSQL").
 */
interface Slot {
  freed: boolean
  readonly free: () => void
}

/** The longest run that still counts as quick (WorkerPool.quick): a claim's round trip or so. */
export const QUICK_RUN_MS = 50

/** The slot of a run starting now, or of a watched generation's end (`watched`): either marks the pool's runs quick or slow as it frees. */
const slotOf = (pool: WorkerPool, clock: Clock.Clock, watched: boolean): Slot | undefined => {
  if (pool.ahead === 0) return undefined
  const startedAt = clock.currentTimeMillisUnsafe()
  const slot: Slot = {
    freed: false,
    free: () => {
      if (slot.freed) return
      slot.freed = true
      pool.quick = !watched && clock.currentTimeMillisUnsafe() - startedAt <= QUICK_RUN_MS
      pool.writing += 1
      pool.freeFiber(false)
    }
  }
  return slot
}

/**
 * The intake (WorkerPool.intake), a function its callers run on their own stack, not a fiber of
 * its own (a queue and a fiber between a claim and the runners cost a scheduler turn per claim):
 * holds each claimed job's lease as it arrives (the keeper renews it while the job waits for a
 * runner) and queues it as runners' work, or in the ready list when it was claimed ahead. Its
 * generation's end, once watched, comes back to the same queue.
 */
export const makeIntake = (deps: WorkerDeps, pool: WorkerPool, runners: Runners): WorkerPool["intake"] => {
  const hold = (claimed: Claimed): Work => {
    // Held until the job ends, as a record of fast properties (heldJob.ts).
    const job = heldJob(claimed.job)
    const book: JobRunBook = {
      lease: runners.keeper.hold(job.id, job.leaseOwner!, claimed.leaseExpiresAt),
      holds: [],
      watcher: runners.watcher,
      ended: (outcome) => Queue.offerUnsafe(runners.work, { held, outcome })
    }
    const held: Held = { job, book, limited: deps.limits.isLimited(job) }
    return { held }
  }
  pool.startReady = () => {
    const next = runners.ready.shift()
    if (next === undefined) return false
    pool.aheadHeld -= 1
    Queue.offerUnsafe(runners.work, next)
    return true
  }
  return (claimed) => {
    for (const one of claimed) {
      if (one.ahead) runners.ready.push(hold(one))
      else Queue.offerUnsafe(runners.work, hold(one))
    }
    startOnIdle(pool)
  }
}


/**
 * One runner fiber: takes work and does it, one at a time, for good. A claimed job runs until
 * it ends or its generation joins the watch list (then the runner moves on and the job stays
 * held); a watched generation's end is finished here. What the job held is released by one
 * `ensuring` when it ends, however it ends.
 */
export const runner = (deps: WorkerDeps, pool: WorkerPool, runners: Runners): Effect.Effect<never> =>
  Effect.flatMap(Clock.Clock, (clock) => runWith(deps, pool, runners, clock))

const runWith = (deps: WorkerDeps, pool: WorkerPool, runners: Runners, clock: Clock.Clock): Effect.Effect<never> => {
  // A plain function, not a generator: per job it builds only the run and its release.
  const run = ({ held, outcome }: Work): Effect.Effect<unknown> => {
    const slot = slotOf(pool, clock, outcome !== undefined)
    const release = released(pool, runners, held, slot)
    if (outcome !== undefined) {
      return endWatched(deps, held.job, held.book, outcome, slot?.free).pipe(logged<void>(undefined, held.job), Effect.ensuring(release))
    }
    return runJob(deps, held.job, held.book, slot?.free).pipe(
      logged<boolean>(false, held.job),
      Effect.onExit((exit) => (exit._tag === "Success" && exit.value ? Effect.void : release))
    )
  }
  return Effect.forever(Effect.flatMap(Queue.take(runners.work), run))
}
