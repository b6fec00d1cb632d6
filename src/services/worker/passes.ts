import { Cause, Clock, Duration, Effect, Option, Ref, Schedule } from "effect"
import type { QueueError, StoreError } from "../../domain/errors.js"
import type { JobId } from "../../domain/ids.js"
import type { QueueGap, QueuePosition } from "../../ports/JobLeaseDriver.js"
import type { QueuedJob } from "../../ports/JobQueue.js"
import { brokerVisibilityMs } from "../brokerClaims.js"
import type { EngineSettings } from "../EngineConfig.js"
import type { WorkerDeps } from "./deps.js"

/** Jobs one reaper pass fails at most; a larger backlog of them takes several passes. */
const REAP_LIMIT = 100

/** Jobs one queue relay pass publishes again at most, pending and expired each. */
const RELAY_LIMIT = 1_000

/** A pass that failed is logged and the next one runs as planned: the store may be back by then. */
const loggingFailure = (message: string) => <A, E, R>(pass: Effect.Effect<A, E, R>): Effect.Effect<void, never, R> =>
  pass.pipe(
    Effect.asVoid,
    Effect.catchCause((cause) => Effect.logError(message, Cause.pretty(cause)))
  )

/** One reaper pass, if this process holds (or takes) the pass; answers the jobs it failed. */
export const reapOnce = ({ config, repo }: Pick<WorkerDeps, "config" | "repo">, workerId: string): Effect.Effect<number, StoreError> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    repo.reap({ workerId, now, passMs: 2 * config.reapIntervalMs, maxAttempts: config.maxAttempts, limit: REAP_LIMIT }))

/** The reaper: a pass every `reapIntervalMs`, the first one interval after the start. */
export const reaper = (deps: Pick<WorkerDeps, "config" | "repo">, workerId: string): Effect.Effect<unknown> =>
  reapOnce(deps, workerId).pipe(
    loggingFailure("the reaper could not reach the store"),
    Effect.schedule(Schedule.spaced(Duration.millis(deps.config.reapIntervalMs)))
  )

/**
 * How long after the relay published a job it may publish it again, the job still waiting: the
 * grace a submitted job gets before it is taken as lost, and never less than a broker holds a
 * delivery (one taken and not acked comes back by itself within that).
 */
export const republishAfterMs = (config: Pick<EngineSettings, "leaseMs" | "queueRelayGraceMs">) =>
  Math.max(config.queueRelayGraceMs, brokerVisibilityMs(config.leaseMs))

/**
 * The jobs this process's relay published in the last `republishMs`, with when, oldest first (a
 * Map keeps insertion order): they are not published again before that passed. An optimisation
 * held in memory only: the relay of another process (this one crashed, or lost the pass) knows
 * none of them and publishes them by the grace rule alone.
 */
const makeRelayMemory = (republishMs: number) => {
  const published = new Map<JobId, number>()
  return {
    /** Forgets the publishes `republishMs` or more before `now`: those jobs may go again. */
    prune: (now: number) => {
      for (const [id, at] of published) {
        if (at > now - republishMs) break
        published.delete(id)
      }
    },
    isRecent: (id: JobId) => published.has(id),
    remember: (jobs: ReadonlyArray<QueuedJob>, now: number) => {
      for (const job of jobs) published.set(job.jobId, now)
    }
  }
}

type RelayMemory = ReturnType<typeof makeRelayMemory>

/**
 * One queue relay pass, if this process holds (or takes) the pass: publishes again what the
 * broker may have lost and this relay did not publish lately, going on through the backlog from
 * `after`; answers where to go on from.
 */
const relayOnce = Effect.fnUntraced(function*(
  { config, repo }: Pick<WorkerDeps, "config" | "repo">,
  workerId: string,
  publish: (jobs: ReadonlyArray<QueuedJob>) => Effect.Effect<void, QueueError>,
  memory: RelayMemory,
  after: QueuePosition | null
): Effect.fn.Return<QueuePosition | null, StoreError | QueueError> {
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
  memory.prune(now)
  // Without a weight: each lane keeps the one its account's submits gave it (1 for a new lane).
  const queued = (gap: QueueGap): QueuedJob => ({ jobId: gap.id, accountId: gap.accountId })
  const expiredDue = expired.filter((gap) => !memory.isRecent(gap.id)).map(queued)
  const pendingDue = pending.filter((gap) => !memory.isRecent(gap.id)).map(queued)
  const jobs = [...expiredDue, ...pendingDue]
  if (jobs.length > 0) {
    yield* publish(jobs)
    // Remembered once published only: a failed publish is tried again on the next pass.
    memory.remember(jobs, now)
    yield* Effect.logInfo("the queue relay published jobs again that the broker had not delivered in time", {
      pending: pendingDue.length,
      expiredLeases: expiredDue.length
    })
  }
  // The cursor walks the whole page, published or not: a job published lately waits its turn.
  return pending.length < RELAY_LIMIT ? null : pending[pending.length - 1]!
})

/**
 * The queue relay, with a broker: a pass every `queueRelayIntervalMs`, the first one interval
 * after the start, each going on through the backlog where the last left it (a failed pass
 * leaves the cursor where it was), and publishing a job it published itself only once
 * `republishAfterMs` passed since. Without a broker there is nothing to relay.
 */
export const relay = (deps: Pick<WorkerDeps, "config" | "queue" | "repo">, workerId: string): Effect.Effect<unknown> =>
  Option.match(deps.queue, {
    onNone: () => Effect.never,
    onSome: ({ publish }) =>
      Effect.flatMap(Ref.make<QueuePosition | null>(null), (cursor) => {
        const memory = makeRelayMemory(republishAfterMs(deps.config))
        return Ref.get(cursor).pipe(
          Effect.flatMap((after) => relayOnce(deps, workerId, publish, memory, after)),
          Effect.flatMap((next) => Ref.set(cursor, next)),
          loggingFailure("the queue relay could not reach the store or the queue"),
          Effect.schedule(Schedule.spaced(Duration.millis(deps.config.queueRelayIntervalMs)))
        )
      })
  })
