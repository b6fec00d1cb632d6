import { Clock, Effect, Latch, Queue, Random, Result, Scope } from "effect"
import { backoffDelayMs } from "../../domain/backoff.js"
import type { JobId } from "../../domain/ids.js"
import type { ProviderHandle } from "../../domain/providerHandle.js"
import { providerPollLagSecondsOf, providerPollsOf, watchedGenerationsOf } from "../../observability/metricSeries.js"
import type { JobEvents } from "../../ports/JobEvents.js"
import { factOfError, type GenerationProvider, type ProviderError, type ProviderRequest, type ProviderStatus } from "../../ports/Provider.js"
import type { EngineConfig } from "../EngineConfig.js"
import type { Lease } from "../leaseKeeper.js"
import { type Due, DueHeap } from "./dueHeap.js"
import { ended, type Generation, generationFailed, Superseded, timedOut, type WatchOutcome } from "./generation.js"
import { marksOf, type ProviderReports, type ReportMarks } from "./providerReports.js"
import { answered, openBudget, type PollBudget, takePoll, throttled } from "./pollBudget.js"

/**
 * Polls one provider may have in flight from one watcher: its HTTP layer's connection pool
 * (providerHttp's DEFAULT_MAX_CONNECTIONS) keeps as many keep-alive connections per host. More
 * would queue polls in that pool ahead of the starts sharing it (decisions.md).
 */
export const POLLERS_PER_PROVIDER = 64

/** How often a provider's dispatcher moves the polls come due to its pollers: the poll lag's grain. */
const TICK_MS = 20

/** A poll's interval is spread by this much either way, so generations started together are not polled together for good. */
const JITTER = 0.1

/**
 * A started generation waiting at its provider: one record on its provider's watch list,
 * not a fiber, a scope or a queue. `ended` hands its end (or the lease's loss) back to the
 * job's run, once.
 */
export interface Watch {
  readonly lease: Lease
  readonly providerId: string
  /** The provider as the generation's credential calls it (its calls count towards that circuit). */
  readonly provider: GenerationProvider
  readonly request: ProviderRequest
  readonly handle: ProviderHandle
  /** When the generation must have ended (epoch ms); past it, it is cancelled at the provider. */
  readonly deadline: number | undefined
  readonly timeoutSeconds: number | undefined
  readonly ended: (outcome: WatchOutcome) => void
}

/** A watch as its list keeps it. */
interface Entry extends Watch, Due {
  /** waiting: in the heap; ready: handed to the pollers; polling: a call in flight; gone: ended or dropped. */
  state: "waiting" | "ready" | "polling" | "gone"
  /** Transient poll failures in a row. */
  failures: number
  /** A callback came while a poll was in flight: poll again at once. */
  hinted: boolean
  /** The job's provider progress and log as written (providerReports.ts). */
  readonly marks: ReportMarks
}

/** One provider's watch list, its poll budget and the fibers that serve it. */
interface Lane {
  readonly heap: DueHeap<Entry>
  readonly ready: Queue.Queue<Entry>
  readonly budget: PollBudget
  /** Open while the heap holds anything: the dispatcher sleeps on it otherwise. */
  readonly busy: Latch.Latch
}

export interface Watcher {
  /** Puts a started generation on its provider's watch list, due at once; synchronous but for a provider's first watch (its fibers start). */
  readonly watch: (watch: Watch) => Effect.Effect<void>
  /** Generations on the list now. */
  readonly size: () => number
  /**
   * A stopping worker's hand-back (handBack.ts): takes every generation off the list, its run not
   * ended, and gives it to `to`; so is every watch from then on, and every poll's generation
   * that would go back on the list (one whose poll finds its end ends as before). Synchronous.
   */
  readonly handOver: (to: (watch: Watch) => void) => void
}

/** What a watcher needs from the engine: hints of provider callbacks, the poll settings, a cancel's retries. */
export interface WatcherDeps {
  readonly events: JobEvents["Service"]
  readonly config: EngineConfig["Service"]
  /** A provider call with its transient errors retried (the start's policy): used for a deadline's cancel. */
  readonly retrying: <A>(call: Effect.Effect<A, ProviderError>, unreachableIsTransient: boolean) => Effect.Effect<A, ProviderError>
  /** Keeps what running generations report of their progress and logs; without it, polls keep nothing of them. */
  readonly reports?: ProviderReports | undefined
}

const isTransient = (error: ProviderError) => (error._tag === "ProviderRejected" ? error.retryable : true)

/**
 * The watch lists of one started worker (or one runOnce): per provider, a min-heap of due times
 * and a map by job id, served by one dispatcher fiber and POLLERS_PER_PROVIDER poller fibers,
 * started at the provider's first watch and living until the scope closes. The dispatcher moves
 * due generations to the pollers within the provider's poll budget (pollBudget.ts); a poller
 * polls one, then puts it back on the list at its next due time (the provider's hint
 * `pollAfterMs`, its `pollIntervalMs` or the engine's `providerPollIntervalMs`, with jitter) or
 * hands its end to its run. A provider callback (a JobEvents hint for the job) makes a waiting
 * generation due at once through one subscription for the whole watcher. A transient poll error
 * is retried on the list after the shared backoff (never sooner than Retry-After) at most
 * `providerRetry.maxRetries` times in a row; a 429 also halves the provider's budget. Past the
 * version's deadline the generation is cancelled at the provider and fails. A lost lease drops
 * it from the list (its `onLost`), and its run ends as superseded.
 */
export const makeWatcher = ({ config, events, reports, retrying }: WatcherDeps): Effect.Effect<Watcher, never, Scope.Scope> =>
  Effect.gen(function*() {
    // A scope of its own, closed with the caller's at the place the watcher was made, whenever its fibers start.
    const scope = yield* Scope.fork(yield* Effect.scope, "sequential")
    // The metrics are moved from plain callbacks: they count in the registry of the context the watcher was made in.
    const metrics = yield* Effect.context<never>()
    const lanes = new Map<string, Lane>()
    const byJob = new Map<JobId, Entry>()
    const maxRetries = config.providerRetry.maxRetries
    // Taken once and drawn from synchronously (no Effect per poll): a seeded Random repeats the backoffs and the jitter.
    const random = yield* Random.Random

    /** Runs `f` once the generation's report on its way, if any, is written (ProviderReports.afterReport). */
    const afterReport = (marks: ReportMarks, f: () => void) => (reports === undefined ? f() : reports.afterReport(marks, f))

    const finish = (entry: Entry, outcome: Generation | Superseded) => {
      if (entry.state === "gone") return
      if (entry.state === "waiting") lanes.get(entry.providerId)!.heap.remove(entry)
      entry.state = "gone"
      if (byJob.get(entry.lease.id) === entry) byJob.delete(entry.lease.id)
      if (entry.lease.onLost !== undefined) entry.lease.onLost = undefined
      watchedGenerationsOf(entry.providerId).modifyUnsafe(-1, metrics)
      entry.ended(outcome)
    }

    /** Where generations go once the worker stops (handOver), instead of back onto the list. */
    let handingOver: ((watch: Watch) => void) | undefined
    /** finish() without the run's end: the generation leaves the list for the hand-back. */
    const handOverOne = (entry: Entry) => {
      if (entry.state === "waiting") lanes.get(entry.providerId)!.heap.remove(entry)
      entry.state = "gone"
      if (byJob.get(entry.lease.id) === entry) byJob.delete(entry.lease.id)
      entry.lease.onLost = undefined
      watchedGenerationsOf(entry.providerId).modifyUnsafe(-1, metrics)
      handingOver!(entry)
    }

    const schedule = (lane: Lane, entry: Entry, at: number) => {
      if (handingOver !== undefined) return handOverOne(entry)
      entry.state = "waiting"
      lane.heap.schedule(entry, entry.deadline === undefined ? at : Math.min(at, entry.deadline))
      lane.busy.openUnsafe()
    }

    /** Polls one generation (or cancels it past its deadline) and puts it back or ends it. */
    const pollOne = (lane: Lane) => (entry: Entry): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (entry.state !== "ready") return Effect.void
        entry.state = "polling"
        // An echo of the previous poll's report not heard by now is not waited for: a hint from here on is a callback.
        entry.marks.echo = false
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          providerPollLagSecondsOf(entry.providerId).updateUnsafe(Math.max(0, now - entry.dueAt) / 1000, metrics)
          if (entry.deadline !== undefined && now >= entry.deadline) {
            return retrying(entry.provider.cancel(entry.handle, entry.request), true).pipe(
              Effect.catch((error) => Effect.logWarning("the provider did not take the cancel", { jobId: entry.lease.id }, error.message)),
              Effect.andThen(Effect.sync(() => finish(entry, timedOut(entry.timeoutSeconds))))
            )
          }
          providerPollsOf(entry.providerId).updateUnsafe(1, metrics)
          return Effect.flatMap(Effect.result(entry.provider.poll(entry.handle, entry.request)), (polled) =>
            Effect.map(Clock.currentTimeMillis, (at) => {
              // A running generation's new progress or log lines are queued for the store; the poller does not wait for the write.
              if (reports !== undefined && entry.state === "polling" && Result.isSuccess(polled) && polled.success._tag === "Running") {
                reports.write(entry.marks, { jobId: entry.lease.id, workerId: entry.lease.workerId, provider: entry.provider }, polled.success, at)
              }
              settle(lane, entry, polled, at)
            }))
        })
      })

    /** What a poll's answer makes of its generation: back on the list at its next due time, or ended. */
    const settle = (lane: Lane, entry: Entry, polled: Result.Result<ProviderStatus, ProviderError>, at: number) => {
      // The lease was lost while the poll was out: its run has ended already.
      if (entry.state !== "polling") return
      if (Result.isFailure(polled)) {
        const error = polled.failure
        const retryAfterMs = error._tag === "ProviderRejected" ? error.retryAfterMs : undefined
        if (error._tag === "ProviderRejected" && error.httpStatus === 429) throttled(lane.budget, at, retryAfterMs)
        if (!isTransient(error) || entry.failures >= maxRetries) return afterReport(entry.marks, () => finish(entry, generationFailed(error.message, factOfError(error))))
        const delay = backoffDelayMs(config.providerRetry, entry.failures++, random.nextDoubleUnsafe(), retryAfterMs)
        return schedule(lane, entry, at + delay)
      }
      const status = polled.success
      answered(lane.budget)
      if (status._tag !== "Running") return afterReport(entry.marks, () => finish(entry, ended(status)))
      entry.failures = 0
      if (entry.hinted) {
        entry.hinted = false
        return schedule(lane, entry, at)
      }
      const interval = status.pollAfterMs ?? entry.provider.pollIntervalMs ?? config.providerPollIntervalMs
      // The backoffs' Random, not Math.random: under a seed the order generations come due in, so which backoff takes which draw, repeats too.
      schedule(lane, entry, at + Math.max(0, Math.round(interval * (1 + JITTER * (2 * random.nextDoubleUnsafe() - 1)))))
    }

    /** Moves the due generations to the pollers, as many as the budget lets go, every tick while any waits. */
    const dispatcher = (lane: Lane): Effect.Effect<never> =>
      Effect.forever(Effect.gen(function*() {
        if (lane.heap.size === 0) {
          lane.busy.closeUnsafe()
          yield* lane.busy.await
        }
        const now = yield* Clock.currentTimeMillis
        while ((lane.heap.nextDueAt() ?? Infinity) <= now && takePoll(lane.budget, now)) {
          const entry = lane.heap.popDue(now)!
          entry.state = "ready"
          Queue.offerUnsafe(lane.ready, entry)
        }
        yield* Effect.sleep(TICK_MS)
      }))

    const laneOf = (providerId: string): Effect.Effect<Lane> =>
      Effect.suspend(() => {
        const found = lanes.get(providerId)
        if (found !== undefined) return Effect.succeed(found)
        return Effect.gen(function*() {
          const lane: Lane = {
            heap: new DueHeap<Entry>(),
            ready: yield* Queue.unbounded<Entry>(),
            budget: openBudget(yield* Clock.currentTimeMillis),
            busy: yield* Latch.make(false)
          }
          lanes.set(providerId, lane)
          const poll = pollOne(lane)
          yield* Effect.forkIn(dispatcher(lane), scope)
          for (let i = 0; i < POLLERS_PER_PROVIDER; i++) yield* Effect.forkIn(Effect.forever(Effect.flatMap(Queue.take(lane.ready), poll)), scope)
          return lane
        })
      })

    // One subscription for every watched generation: a provider callback's hint makes its generation due now.
    // A hint for every job (undefined) is ignored: the polls find any end on their own, and 10,000 polls at once would only burst.
    yield* events.subscribeAll((jobId) => {
      const entry = jobId === undefined ? undefined : byJob.get(jobId)
      if (entry === undefined) return
      // The hint of the generation's own report: polling at once for it would poll every
      // generation whose progress moves twice an interval (a callback in the same moment waits
      // for the next poll, as without callbacks).
      if (entry.marks.echo) {
        entry.marks.echo = false
        return
      }
      if (entry.state === "polling") entry.hinted = true
      else if (entry.state === "waiting") {
        const lane = lanes.get(entry.providerId)!
        lane.heap.remove(entry)
        entry.state = "ready"
        Queue.offerUnsafe(lane.ready, entry)
      }
    })

    return {
      watch: (watch) =>
        handingOver !== undefined ? Effect.sync(() => handingOver!(watch)) : Effect.flatMap(laneOf(watch.providerId), (lane) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            const entry: Entry = { ...watch, dueAt: now, slot: -1, state: "waiting", failures: 0, hinted: false, marks: marksOf(watch.request) }
            // A job is watched once per run; a run that watched it before has lost it.
            const before = byJob.get(watch.lease.id)
            if (before !== undefined) finish(before, new Superseded())
            byJob.set(watch.lease.id, entry)
            watchedGenerationsOf(watch.providerId).modifyUnsafe(1, metrics)
            watch.lease.onLost = () => finish(entry, new Superseded())
            schedule(lane, entry, now)
          })),
      size: () => byJob.size,
      handOver: (to) => {
        handingOver = to
        // A generation being polled is handed over when its answer would put it back on the list (schedule), or ends.
        for (const entry of [...byJob.values()]) if (entry.state !== "polling") handOverOne(entry)
      }
    }
  })
