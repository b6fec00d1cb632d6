import { Effect, Queue, Ref } from "effect"
import type { Claimed } from "./claims.js"

/**
 * What a started worker's fibers share: the claimer hands its claims to `intake` for
 * `concurrency` runner fibers, counting the fibers free to take a job in `idle`.
 */
export interface WorkerPool {
  readonly concurrency: number
  /**
   * Takes claimed jobs in, synchronously, on the caller's stack (a claim, a riding claim as it
   * settles, a hand-off's store answer): holds their leases and queues them as the runners' work,
   * or in the ready list when claimed ahead (runner.ts's `makeIntake` sets it as the worker starts).
   */
  intake: (claimed: ReadonlyArray<Claimed>) => void
  /**
   * Fibers neither running nor promised a job: the claimer takes them all for the length of
   * a claim, a hand-off one until its submit is written, so neither promises a fiber twice.
   */
  readonly idle: Ref.Ref<number>
  /** A fiber finished: wakes a claimer waiting for capacity, or the drain. */
  readonly freed: Queue.Queue<void>
  /** A job under a provider limit ended: its room may let a waiting job go. */
  readonly roomFreed: Queue.Queue<void>
  /** Gives a fiber back to `idle`, or to the first job waiting in the ready list (`startReady`). */
  readonly fiberFreed: Effect.Effect<void>
  /**
   * `fiberFreed`, synchronous. `wake` false leaves a riding claim parked: the caller's completion
   * goes to the batch next, and that batch takes the idle fiber.
   */
  readonly freeFiber: (wake: boolean) => void
  /**
   * The most jobs claimed ahead of the free fibers (docs/decisions.md, "Claiming ahead on
   * PostgreSQL"): 0 where the store cannot put a claimed job back (JobRepo.returnUnstarted). From
   * the store only claims riding on completions claim ahead; from a broker, every claim while
   * runs are quick.
   */
  readonly ahead: number
  /**
   * Whether the runs ending here are quick (the last one to end took at most QUICK_RUN_MS and
   * never waited on the watch list): only then do claims take jobs ahead. Runs of generations
   * would leave jobs claimed ahead waiting a whole run, unstartable elsewhere and uncancellable.
   * False until a run has ended: a worker's first claim takes no more jobs than its idle fibers.
   */
  quick: boolean
  /** Jobs claimed ahead and not started: on their way to the ready list, or in it. They hold no fiber. */
  aheadHeld: number
  /** Runs whose slot was given back as their completion was written, until it is answered: the drain waits for them. */
  writing: number
  /**
   * Starts the first job of the ready list on a fiber that freed (the runners' intake sets it):
   * the fiber stays taken. False when none is ready.
   */
  startReady: () => boolean
  /** Cleared when the drain starts: no more hand-offs. */
  readonly accepting: Ref.Ref<boolean>
  /**
   * Whether the last claim left fibers idle (the queue ran dry). While a backlog fills every
   * claim, a fiber set aside for a submit would only sit out the submit's transaction.
   */
  readonly queueDry: Ref.Ref<boolean>
  /** A new lease owner: each claim and each hand-off its own. */
  readonly nextWorkerId: () => string
  /** Whether `nextWorkerId` made this lease owner: the job's fiber is one of this pool's. */
  readonly owns: (leaseOwner: string) => boolean
  /**
   * The wake-up of the claimer's claim while it rides on completions (ClaimRider.waiting): a
   * fiber freed another way (a failure, a lost lease) calls it, as the claim would not free it.
   */
  riderWake: (() => void) | undefined
}

export const makeWorkerPool = (processId: string, concurrency: number, ahead = 0): Effect.Effect<WorkerPool> =>
  Effect.gen(function*() {
    const idle = yield* Ref.make(concurrency)
    const freed = yield* Queue.sliding<void>(1)
    const prefix = `wrk_${processId}_`
    // A ready job takes the fiber first. Not while `idle` is below 0: a riding claim took this
    // fiber already (one job for each fiber its endings free), and that job is on its way.
    const freeFiber = (wake: boolean) => {
      if (idle.ref.current >= 0 && pool.startReady()) return
      idle.ref.current += 1
      Queue.offerUnsafe(freed, undefined)
      if (wake && pool.riderWake !== undefined && idle.ref.current > 0) pool.riderWake()
    }
    let claims = 0
    const pool: WorkerPool = {
      concurrency,
      intake: () => {
        throw new Error("the worker's intake was used before its runners were made")
      },
      idle,
      freed,
      roomFreed: yield* Queue.sliding<void>(1),
      fiberFreed: Effect.sync(() => freeFiber(true)),
      freeFiber,
      ahead,
      quick: false,
      aheadHeld: 0,
      writing: 0,
      startReady: () => false,
      accepting: yield* Ref.make(true),
      queueDry: yield* Ref.make(false),
      nextWorkerId: () => `${prefix}${++claims}`,
      owns: (leaseOwner) => leaseOwner.startsWith(prefix),
      riderWake: undefined
    }
    return pool
  })

/**
 * Ready jobs take the fibers idle now: wherever fibers go back to `idle` other than by
 * `fiberFreed` (a claim that took fewer jobs than the fibers it took), or jobs join the ready
 * list, so no ready job waits while a fiber idles.
 */
export const startOnIdle = (pool: WorkerPool) => {
  const idle = pool.idle.ref
  while (idle.current > 0 && pool.startReady()) idle.current -= 1
}

/**
 * Waits until every fiber is idle again, no job claimed ahead waits and no completion is on its
 * way: every job run or handed off has ended (a ready job left after the drain's return starts
 * on the next fiber to free).
 */
export const drained = (pool: WorkerPool): Effect.Effect<void> =>
  Effect.gen(function*() {
    while ((yield* Ref.get(pool.idle)) < pool.concurrency || pool.aheadHeld > 0 || pool.writing > 0) yield* Queue.take(pool.freed)
  })
