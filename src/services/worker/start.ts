import { Duration, Effect, Fiber, Option, Queue, Ref, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { QueueError } from "../../domain/errors.js"
import { brokerVisibilityMs, makeBrokerClaims } from "../brokerClaims.js"
import { handBackWatched } from "../watch/handBack.js"
import { claimer, MAX_CLAIM } from "./claimer.js"
import type { WorkerDeps } from "./deps.js"
import { reserveSlot } from "./handOff.js"
import { reaper, relay } from "./passes.js"
import { drained, makeWorkerPool, startOnIdle, type WorkerPool } from "./pool.js"
import { makeIntake, MAX_RUNNERS, runner, type Runners, type Work } from "./runner.js"

/**
 * At a drain, the jobs claimed ahead and waiting for a fiber go back to the queue in one write
 * (JobRepo.returnUnstarted): pending again with no attempt spent, and a signal for the workers
 * of every process, as a submit's; on a broker each is published again and its delivery here
 * acked, so another worker takes it at once rather than after the delivery's visibility. Those
 * it does not take back (a reclaim, a lost lease, a store fault) stay ready and start as fibers
 * free, the drain waiting for them as for any run.
 */
const returnReady = (deps: Pick<WorkerDeps, "queue" | "repo" | "signal">, pool: WorkerPool, runners: Runners) =>
  Effect.suspend(() => {
    const ready = runners.ready.splice(0)
    const put = deps.repo.returnUnstarted
    if (ready.length === 0 || put === undefined) return Effect.void
    return put(ready.map(({ held }) => ({ id: held.job.id, workerId: held.book.lease.workerId }))).pipe(
      Effect.catch((error) => Effect.as(Effect.logWarning("jobs claimed ahead could not be put back in the queue; running them", error.message), [])),
      Effect.flatMap((ids) => {
        const back = new Set(ids)
        const returned: Array<Work> = []
        for (const work of ready) {
          if (!back.has(work.held.job.id)) runners.ready.push(work)
          else {
            runners.keeper.release(work.held.book.lease)
            pool.aheadHeld -= 1
            returned.push(work)
          }
        }
        startOnIdle(pool)
        if (returned.length === 0) return Effect.void
        return Effect.andThen(deps.signal.notify, republished(deps, runners, returned))
      })
    )
  })

/** Jobs put back in the queue at a drain, published again on the broker they came from, their deliveries here acked. */
const republished = ({ queue }: Pick<WorkerDeps, "queue">, { broker }: Runners, returned: ReadonlyArray<Work>) =>
  broker === undefined || Option.isNone(queue) ? Effect.void : queue.value.publish(returned.map(({ held: { job } }) => ({ jobId: job.id, accountId: job.accountId }))).pipe(
    Effect.catch((error) => Effect.logWarning("jobs put back in the queue could not be published again; the queue relay will", error.message)),
    Effect.andThen(Effect.forEach(returned, ({ held: { job } }) => broker.done(job.id), { discard: true }))
  )

/**
 * The jobs a worker claims ahead of its free fibers, per fiber, while its runs are quick (pool.ts's
 * `quick`): from the store in claims riding on its completions, from a broker in every claim.
 * Four rather than one: each combined ending and claim then carries about 50 jobs instead of 30,
 * and the runners that take the ready jobs while their completions are on their way grow with it
 * (`concurrency + ahead`). Draining 15,500 jobs, that took 6-20 % off the CPU per job and, in
 * eleven pairs of twelve, ran 7-28 % more jobs a second (docs/decisions.md, "Four jobs claimed
 * ahead per fiber"). A claim takes MAX_CLAIM at most.
 */
export const AHEAD_PER_FIBER = 4

/**
 * Starts a worker that holds at most `concurrency` jobs at once (claimed, running or with a
 * generation waiting on the watch list), in the current scope: one claimer, at most
 * MAX_RUNNERS runner fibers, the watch list's fibers (per provider, from its first watch), and
 * the reaper pass. The claimer takes as many jobs as there are free slots in one claim (each
 * claim its own lease owner) and hands them to the intake, which holds their leases and queues
 * them for the runners; with none to take the claimer waits for a signal or the poll
 * interval. A started generation leaves its runner for the watch list, and its end comes back
 * to the runners to be finished; its slot is free only then. Free slots are also offered to
 * this process's submits (LocalWorkers): a job the store writes as such a slot's claim joins
 * the intake the same way. With a queue broker the claimer waits on the broker's deliveries instead, there
 * is no hand-off, and the queue relay's pass runs beside the reaper's, every
 * `queueRelayIntervalMs` (docs/queues.md).
 * Closing the scope drains: no new claims or hand-offs; a generation started and waiting at its
 * provider (on the watch list, its handle stored) is not waited for: its lease is handed back at
 * once (watch/handBack.ts), for another worker or this one's restart to resume polling it. Runs
 * before or inside their provider start, or storing an ended generation's outputs, get
 * `drainTimeoutMs` to finish (one whose start is answered meanwhile is handed back then); a job
 * cut off later is retried by another worker once its lease expires.
 */
export const start = (deps: WorkerDeps) =>
  Effect.fn("genjobs.worker.start")(function*(concurrency: number): Effect.fn.Return<void, QueueError, Scope.Scope> {
    const { config, localWorkers, queue } = deps
    const processId = randomBytes(6).toString("hex")
    const keeper = yield* deps.newLeaseKeeper
    // Made before the drain's finalizer, so closed after it: watched generations are polled through the drain.
    const watcher = yield* deps.calls.newWatcher
    const broker = Option.isNone(queue)
      ? undefined
      // Deliveries are held half a lease longer than the lease they lead to, which starts a
      // little later (at the claim): redelivered, a dead holder's job is reclaimable at once.
      : yield* makeBrokerClaims(
        yield* queue.value.consume({ name: `wrk_${processId}`, visibilityMs: brokerVisibilityMs(config.leaseMs) }),
        config.leaseMs
      )
    // Claiming ahead needs the store to take back what a drain did not start (on a broker, the
    // drain publishes those jobs again).
    const ahead = deps.repo.returnUnstarted !== undefined ? Math.min(AHEAD_PER_FIBER * concurrency, MAX_CLAIM) : 0
    const pool = yield* makeWorkerPool(processId, concurrency, ahead)
    const shared: Runners = { work: yield* Queue.unbounded<Work>(), ready: [], keeper, watcher, broker }
    pool.intake = makeIntake(deps, pool, shared)
    // A broker's deliveries go to whichever process takes them first: no local hand-off.
    if (broker === undefined) yield* localWorkers.offer(reserveSlot(deps, pool))
    // What runners use is in `deps`, resolved once here. A fork shares its parent's context (no
    // copy on Effect 4), which also holds the loggers, log level and tracer the runners log with.
    // Claiming ahead, a runner whose job's end waits for its batch has given its slot back (see
    // runner.ts's Slot): `ahead` more runners take the ready jobs meanwhile.
    const runners = yield* Effect.forEach(
      Array.from({ length: Math.min(concurrency + ahead, MAX_RUNNERS) }),
      () => Effect.forkScoped(runner(deps, pool, shared))
    )
    const background = [
      yield* Effect.forkScoped(claimer(deps, pool, broker)),
      yield* Effect.forkScoped(reaper(deps, `rpr_${processId}`)),
      // With a broker: what it may have lost is published again, one process at a time.
      yield* Effect.forkScoped(relay(deps, `rly_${processId}`))
    ]
    const handBack = deps.repo.handBackLeases === undefined ? undefined : handBackWatched(watcher, {
      handBackLeases: deps.repo.handBackLeases,
      keeper,
      // On a broker a job runs where its delivery goes: published again, it is resumed at once.
      handedBack: Option.isNone(queue) ? undefined : (watches) =>
        queue.value.publish(watches.map(({ lease, request }) => ({ jobId: lease.id, accountId: request.job.accountId }))).pipe(
          Effect.catch((error) => Effect.logWarning("jobs handed back could not be queued again; the queue relay will", error.message))
        )
    })
    // The drain waits for the runs before or inside their provider start, beside the hand-back
    // of the started generations (their slots free as their leases are written back).
    const draining = handBack === undefined ? drained(pool) : Effect.raceFirst(drained(pool), handBack)
    yield* Effect.addFinalizer(() =>
      Ref.set(pool.accepting, false).pipe(
        Effect.andThen(Fiber.interruptAll(background)),
        Effect.andThen(returnReady(deps, pool, shared)),
        // Finalizers run uninterruptibly: the wait must be made interruptible for its timeout to end it.
        Effect.andThen(Effect.interruptible(draining).pipe(Effect.timeout(Duration.millis(config.drainTimeoutMs)), Effect.ignore)),
        Effect.andThen(Fiber.interruptAll(runners))
      )
    )
  })
