import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Queue, Ref, Schedule, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import type { QueueError, StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import type { Job, JobError, OutputItem } from "../domain/job.js"
import type { ProviderRouteRef } from "../domain/providerHandle.js"
import { type LimitPlan, limitPlanOf } from "../domain/providerLimits.js"
import { JobQueue } from "../ports/JobQueue.js"
import { JobRepo } from "../ports/JobRepo.js"
import type { QueuePosition } from "../ports/JobLeaseDriver.js"
import { type ProviderError, type ProviderOutput } from "../ports/Provider.js"
import { JobSignal } from "../ports/JobSignal.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { Catalog } from "./Catalog.js"
import { EngineConfig } from "./EngineConfig.js"
import { LocalWorkers, type ReserveSlot } from "./LocalWorkers.js"
import { type LeaseKeeper, makeLeaseKeeper } from "./leaseKeeper.js"
import { makeOutputStore, type OutputRefused } from "./outputStore.js"
import { backoff } from "./backoffSchedule.js"
import { makeBrokerClaims } from "./brokerClaims.js"
import { makeProviderCalls, Superseded } from "./providerCalls.js"

const internal = (message: string): JobError => ({ code: "INTERNAL_ERROR", message })

/** Jobs one reaper pass fails at most; a larger backlog of them takes several passes. */
const REAP_LIMIT = 100

/** How long a broker holds a worker's delivery: half as long again as the job's lease. */
export const brokerVisibilityMs = (leaseMs: number) => Math.round(leaseMs * 1.5)

/** Jobs one queue relay pass publishes again at most, pending and expired each. */
const RELAY_LIMIT = 1_000

/** How a run ends before its result is written: the job's outputs, or why it failed; the route of a start that ended in its call. */
type Ending =
  | { readonly _tag: "Done"; readonly outputs: ReadonlyArray<OutputItem>; readonly route?: ProviderRouteRef }
  | { readonly _tag: "Failed"; readonly error: JobError; readonly route?: ProviderRouteRef }

const sameOutputs = (job: Job, outputs: ReadonlyArray<OutputItem>) =>
  job.status === "completed" && job.outputs !== null && job.outputs.map((o) => o.url).join("\n") === outputs.map((o) => o.url).join("\n")

export const make = Effect.gen(function*() {
  const repo = yield* JobRepo
  const catalog = yield* Catalog
  const signal = yield* JobSignal
  const webhookSignal = yield* WebhookSignal
  const config = yield* EngineConfig
  const localWorkers = yield* LocalWorkers
  // A queue broker when one is configured; else the store is the queue (claimBatch, JobSignal).
  const queue = yield* Effect.serviceOption(JobQueue)
  const files = yield* makeOutputStore
  const calls = yield* makeProviderCalls
  const newLeaseKeeper = makeLeaseKeeper.pipe(Effect.provide(yield* Effect.context<JobRepo | EngineConfig>()))

  type OutputError = OutputRefused | ProviderError | StoreError

  /** Stores the outputs, fetching again after a transient failure (of the provider's file host or of the BlobStore). */
  const storeOutputs = (job: Job, attempt: string, outputs: ReadonlyArray<ProviderOutput>, written: Array<string>) =>
    files.store(job.id, attempt, outputs, written).pipe(
      Effect.retry({
        schedule: backoff(config.providerRetry, (error: OutputError) => (error._tag === "ProviderRejected" ? error.retryAfterMs : undefined)).pipe(
          Schedule.intersect(Schedule.recurs(config.providerRetry.maxRetries))
        ),
        while: (error) =>
          error._tag !== "OutputRefused" && (error._tag === "StoreError" || error._tag === "ProviderUnreachable" || error.retryable)
      }),
      Effect.map((stored): Ending => ({ _tag: "Done", outputs: stored })),
      Effect.catchAll((error) =>
        error._tag === "StoreError"
          ? Effect.die(error)
          : Effect.succeed<Ending>({ _tag: "Failed", error: { code: "GENERATION_FAILED", message: error.message } })
      )
    )

  /** Runs the job at its provider and stores what it made; Superseded when the lease was lost on the way. */
  const execute = (job: Job, workerId: string, attempt: string, written: Array<string>): Effect.Effect<Ending, Superseded, Scope.Scope> =>
    Effect.gen(function*() {
      const resolved = yield* Effect.orDie(catalog.forJob(job.model, job.version))
      if (resolved === undefined || resolved.version.status === "disabled" || resolved.version.status === "deleted") {
        return { _tag: "Failed", error: internal(`The model version ${job.model}@${job.version} is no longer available`) } as const
      }
      const generation = yield* calls.generate(job, workerId, resolved.model, resolved.version)
      if (generation._tag === "Failed") return generation
      const stored = yield* storeOutputs(job, attempt, generation.outputs, written)
      return generation.route === undefined ? stored : { ...stored, route: generation.route }
    }).pipe(
      Effect.catchAllDefect((defect) =>
        Effect.logError("job run failed unexpectedly", { jobId: job.id }, Cause.pretty(Cause.die(defect))).pipe(
          Effect.as({ _tag: "Failed", error: internal("The job failed for an internal reason; its cost was refunded") } as const)
        )
      )
    )

  /**
   * Writes how the job ended, retrying store errors with backoff for as long as the race with
   * the lease lets it (instead of leaving the job to wait out its lease and run again).
   */
  const settle = (job: Job, workerId: string, ending: Ending) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      ending._tag === "Done"
        ? repo.complete(job.id, workerId, ending.outputs, now, ending.route)
        : repo.fail(job.id, workerId, ending.error, now, ending.route)).pipe(
        Effect.tapError((error) => Effect.logWarning("a job's result could not be written; retrying", { jobId: job.id }, error.message)),
        Effect.retry(backoff(config.storeRetry))
      )

  /**
   * Runs one claimed job under its lease, kept by `keeper` until the run ends. A run whose lease
   * is lost stops where it is; files it wrote under its attempt's keys are removed unless its
   * completion is the one that was written.
   */
  const runJob = (job: Job, workerId: string, leaseExpiresAt: number, keeper: LeaseKeeper) =>
    Effect.scoped(Effect.gen(function*() {
      const lost = yield* keeper.hold(job.id, workerId, leaseExpiresAt)
      const attempt = randomBytes(4).toString("hex")
      const written: Array<string> = []
      const ran = yield* Effect.raceFirst(
        Effect.either(execute(job, workerId, attempt, written)).pipe(Effect.map(Option.some)),
        lost.pipe(Effect.as(Option.none()))
      )
      if (Option.isNone(ran) || ran.value._tag === "Left") {
        yield* Effect.logWarning("lease lost; another worker owns the job now", { jobId: job.id })
        return yield* files.remove(written)
      }
      const ending = ran.value.right
      const settled = yield* Effect.raceFirst(settle(job, workerId, ending).pipe(Effect.map(Option.some)), lost.pipe(Effect.as(Option.none())))
      const ended = Option.flatten(settled)
      if (Option.isSome(ended)) {
        // Its webhook was written with the final state and is due now: dispatchers need not wait for their poll.
        if (ended.value.webhookUrl !== null) yield* webhookSignal.notify
        if (ending._tag === "Failed") yield* files.remove(written)
        return
      }
      // Superseded, or its answer lost: the files stay only if this run's completion is the one stored.
      const stored = yield* repo.get(job.id).pipe(Effect.option, Effect.map(Option.flatten))
      const ours = ending._tag === "Done" && Option.isSome(stored) && sameOutputs(stored.value, ending.outputs)
      if (!ours) {
        yield* Effect.logWarning("the job ended elsewhere; this run's files are removed", { jobId: job.id })
        yield* files.remove(written)
      }
    }))

  /** The catalog's provider limits, worked out again only when its revision changes. */
  let limits: { readonly revision: number; readonly plan: LimitPlan } | undefined
  const limitPlan = Effect.map(catalog.snapshot, (stored) => {
    if (limits?.revision !== stored.revision) limits = { revision: stored.revision, plan: limitPlanOf(stored.document) }
    return limits.plan
  })

  const limitedIn = (plan: LimitPlan, job: Job) => plan.versions.some((v) => v.model === job.model && v.version === job.version)
  const isLimited = (job: Job) => (limits === undefined ? false : limitedIn(limits.plan, job))

  /** Claims up to `limit` jobs; each with its lease's end on this process's clock (measured before the claim, so never late). */
  const claimUpTo = (workerId: string, limit: number) =>
    Effect.gen(function*() {
      const plan = yield* limitPlan
      const now = yield* Clock.currentTimeMillis
      const jobs = yield* repo.claimBatch({ workerId, now, leaseMs: config.leaseMs, maxAttempts: config.maxAttempts, limit, limits: plan })
      return jobs.map((job) => ({ job, leaseExpiresAt: now + config.leaseMs }))
    })

  /**
   * One queue relay pass, if this process holds (or takes) the pass: publishes again what the
   * broker may have lost, going on through the backlog from `after`; answers where to go on from.
   */
  const relayOnce = (
    workerId: string,
    publish: (ids: ReadonlyArray<JobId>) => Effect.Effect<void, QueueError>,
    after: QueuePosition | null
  ): Effect.Effect<QueuePosition | null, StoreError | QueueError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const gaps = yield* repo.queueGaps({
        workerId,
        now,
        passMs: 2 * config.queueRelayIntervalMs,
        graceMs: config.queueRelayGraceMs,
        after,
        maxAttempts: config.maxAttempts,
        limit: RELAY_LIMIT
      })
      if (Option.isNone(gaps)) return null
      const { expired, pending } = gaps.value
      const ids = [...expired, ...pending.map((p) => p.id)]
      if (ids.length > 0) {
        yield* publish(ids)
        yield* Effect.logInfo("the queue relay published jobs again that the broker had not delivered in time", {
          pending: pending.length,
          expiredLeases: expired.length
        })
      }
      return pending.length < RELAY_LIMIT ? null : pending[pending.length - 1]!
    })

  /** Claims and runs one job; false when there was none. */
  const runOnce = (workerId: string): Effect.Effect<boolean, StoreError> =>
    Effect.scoped(Effect.gen(function*() {
      const keeper = yield* newLeaseKeeper
      const [claimed] = yield* claimUpTo(workerId, 1)
      if (claimed === undefined) return false
      yield* runJob(claimed.job, workerId, claimed.leaseExpiresAt, keeper)
      return true
    }))

  /** One reaper pass, if this process holds (or takes) the pass; answers the jobs it failed. */
  const reapOnce = (workerId: string): Effect.Effect<number, StoreError> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      repo.reap({ workerId, now, passMs: 2 * config.reapIntervalMs, maxAttempts: config.maxAttempts, limit: REAP_LIMIT }))

  /**
   * Starts `concurrency` worker fibers fed by one claimer, and the reaper pass, in the current
   * scope. The claimer takes as many jobs as there are idle fibers in one claim (each claim its
   * own lease owner) and queues them in a local buffer the fibers take from; with none to take
   * it waits for a signal or the poll interval. Idle fibers are also offered to this process's
   * submits (LocalWorkers): a job the store writes as such a fiber's claim joins the buffer
   * the same way. With a queue broker the claimer waits on the broker's deliveries instead, there
   * is no hand-off, and the queue relay's pass runs beside the reaper's, every
   * `queueRelayIntervalMs` (docs/queues.md).
   * Closing the scope drains: no new claims or hand-offs, running jobs get `drainTimeoutMs` to
   * finish; a job cut off later is retried by another worker once its lease expires.
   */
  const start = (concurrency: number) =>
    Effect.gen(function*() {
      const processId = randomBytes(6).toString("hex")
      let claims = 0
      const keeper = yield* newLeaseKeeper
      const broker = Option.isNone(queue)
        ? undefined
        // Deliveries are held half a lease longer than the lease they lead to, which starts a
        // little later (at the claim): redelivered, a dead holder's job is reclaimable at once.
        : yield* makeBrokerClaims(
          yield* queue.value.consume({ name: `wrk_${processId}`, visibilityMs: brokerVisibilityMs(config.leaseMs) }),
          config.leaseMs
        )
      /**
       * Up to `limit` jobs for a new lease owner. From a broker: limited versions' pending jobs
       * from the store (their room is counted there), the rest from the broker's deliveries,
       * waiting up to `waitMs` for one. From the store: one claim, no wait.
       */
      const claimFor = (limit: number, waitMs: number) =>
        Effect.gen(function*() {
          const workerId = nextWorkerId()
          if (broker === undefined) return yield* claimUpTo(workerId, limit)
          const plan = yield* limitPlan
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
            (id) => Effect.map(repo.get(id), (job) => Option.isSome(job) && job.value.status === "processing")
          )
          return [
            ...limited.map((job) => ({ job, leaseExpiresAt: limitedAt + config.leaseMs })),
            ...delivered.map((job) => ({ job, leaseExpiresAt: deliveredAt + config.leaseMs }))
          ]
        })
      const buffer = yield* Queue.unbounded<{ readonly job: Job; readonly leaseExpiresAt: number }>()
      // Fibers neither running nor promised a job: the claimer takes them all for the length of
      // a claim, a hand-off one until its submit is written, so neither promises a fiber twice.
      const idle = yield* Ref.make(concurrency)
      // A fiber finished: wakes a claimer waiting for capacity, or the drain.
      const freed = yield* Queue.sliding<void>(1)
      // A job under a provider limit ended: its room may let a waiting job go.
      const roomFreed = yield* Queue.sliding<void>(1)
      const fiberFreed = Ref.update(idle, (n) => n + 1).pipe(Effect.zipRight(Queue.offer(freed, undefined)))
      const runner = Effect.forever(
        Queue.take(buffer).pipe(
          Effect.flatMap(({ job, leaseExpiresAt }) =>
            runJob(job, job.leaseOwner!, leaseExpiresAt, keeper).pipe(
              Effect.ensuring(isLimited(job) ? Queue.offer(roomFreed, undefined) : Effect.void),
              Effect.ensuring(broker === undefined ? Effect.void : broker.done(job.id)),
              // A runner outlives any one job: a store error that outlasted the retries leaves the
              // job to its lease (another worker resumes it), never a runner gone for good.
              Effect.catchAllCause((cause) =>
                Cause.isInterruptedOnly(cause)
                  ? Effect.failCause(cause)
                  : Effect.logError("a job run ended with an error; the job is retried once its lease expires", { jobId: job.id }, Cause.pretty(cause))
              )
            )),
          Effect.ensuring(fiberFreed)
        )
      )
      const nextWorkerId = () => `wrk_${processId}_${++claims}`
      let accepting = true
      // Whether the last claim left fibers idle (the queue ran dry). While a backlog fills every
      // claim, a fiber set aside for a submit would only sit out the submit's transaction.
      let queueDry = false
      const reserve: ReserveSlot = (job) =>
        Effect.gen(function*() {
          if (!accepting || !queueDry) return Option.none()
          // A limited version's room is counted by the limited claim alone.
          const plan = yield* Effect.option(limitPlan)
          if (Option.isNone(plan) || limitedIn(plan.value, job)) return Option.none()
          if (!(yield* Ref.modify(idle, (n) => (n > 0 ? [true, n - 1] : [false, n])))) return Option.none()
          const now = yield* Clock.currentTimeMillis
          const lease = { now, leaseOwner: nextWorkerId(), leaseExpiresAt: now + config.leaseMs, maxAttempts: config.maxAttempts }
          return Option.some({
            lease,
            run: (claimed: Job) => Queue.offer(buffer, { job: claimed, leaseExpiresAt: lease.leaseExpiresAt }),
            release: fiberFreed
          })
        })
      // A broker's deliveries go to whichever process takes them first: no local hand-off.
      if (broker === undefined) yield* localWorkers.offer(reserve)
      // Uninterruptible from taking the idle fibers to the buffer: a drain never strands claimed
      // jobs, nor fibers taken for a claim. None when every fiber is busy or promised.
      const claimForIdle = Effect.uninterruptible(Effect.gen(function*() {
        const free = yield* Ref.getAndSet(idle, 0)
        if (free === 0) return Option.none()
        const exit = yield* Effect.exit(claimFor(free, config.pollIntervalMs).pipe(Effect.tap((jobs) => Queue.offerAll(buffer, jobs))))
        const taken = Exit.isSuccess(exit) ? exit.value.length : 0
        queueDry = Exit.isSuccess(exit) && taken < free
        yield* Ref.update(idle, (n) => n + free - taken)
        return Option.some({ free, exit })
      }))
      const claimer = Effect.gen(function*() {
        while (true) {
          const claimed = yield* claimForIdle
          if (Option.isNone(claimed)) {
            yield* Queue.take(freed)
            continue
          }
          const { exit, free } = claimed.value
          if (Exit.isFailure(exit)) {
            yield* Effect.logError(broker === undefined ? "worker could not reach the store" : "worker could not reach the store or the queue", Cause.pretty(exit.cause))
            yield* Effect.sleep(Duration.millis(config.pollIntervalMs))
          } else if (exit.value.length < free && broker === undefined) {
            // The queue ran dry, or what is left waits for provider room: a submit signals, a
            // limited job ending here frees room, and the poll covers a lost signal and room
            // freed in other processes.
            yield* Effect.raceFirst(signal.wait(config.pollIntervalMs), Queue.take(roomFreed))
          }
        }
      })
      const reaper = Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(Duration.millis(config.reapIntervalMs))
          const exit = yield* Effect.exit(reapOnce(`rpr_${processId}`))
          if (Exit.isFailure(exit)) yield* Effect.logError("the reaper could not reach the store", Cause.pretty(exit.cause))
        }
      })
      // With a broker: what it may have lost is published again, one process at a time.
      const publish = Option.isNone(queue) ? undefined : queue.value.publish
      const relay = publish === undefined ? Effect.never : Effect.gen(function*() {
        let after: QueuePosition | null = null
        while (true) {
          yield* Effect.sleep(Duration.millis(config.queueRelayIntervalMs))
          const exit: Exit.Exit<QueuePosition | null, StoreError | QueueError> = yield* Effect.exit(relayOnce(`rly_${processId}`, publish, after))
          if (Exit.isSuccess(exit)) after = exit.value
          else yield* Effect.logError("the queue relay could not reach the store or the queue", Cause.pretty(exit.cause))
        }
      })
      const runners = yield* Effect.forEach(Array.from({ length: concurrency }), () => Effect.forkScoped(runner))
      const background = [yield* Effect.forkScoped(claimer), yield* Effect.forkScoped(reaper), yield* Effect.forkScoped(relay)]
      const drained = Effect.gen(function*() {
        while ((yield* Ref.get(idle)) < concurrency) yield* Queue.take(freed)
      })
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          accepting = false
        }).pipe(
          Effect.zipRight(Fiber.interruptAll(background)),
          // Finalizers run uninterruptibly: the wait must be made interruptible for its timeout to end it.
          Effect.zipRight(Effect.interruptible(drained).pipe(Effect.timeout(Duration.millis(config.drainTimeoutMs)), Effect.ignore)),
          Effect.zipRight(Fiber.interruptAll(runners))
        )
      )
    })

  return { runOnce, reapOnce, start } as const
})

export class Worker extends Context.Tag("genjobs/Worker")<Worker, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Worker, make)
}
