import { Cause, Clock, Context, Duration, Effect, Latch, Layer, Metric, Option, Queue, Random, Result, type Scope, Stream } from "effect"
import { ServiceUnavailable, type StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import { isTerminal, type Job, type JobStatus } from "../domain/job.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobLogRepo } from "../ports/JobLogRepo.js"
import { JobRepo } from "../ports/JobRepo.js"
import { type LogLine, MAX_LOG_LINES } from "../domain/providerLogs.js"
import { EngineConfig } from "./EngineConfig.js"
import { makeDeadlines } from "./watchDeadlines.js"
import { makeWriteBatcher } from "./writeBatcher.js"
import { makeHintLog } from "./watchHints.js"

/**
 * A job's place in its status sequence: pending 1, processing 2, a terminal status 3. Statuses
 * only move forward, so this numbers the status stream's events: a follower that saw event n
 * resumes after it (Last-Event-ID) without seeing it again.
 */
export const statusRank = (status: JobStatus): number =>
  status === "pending" ? 1 : status === "processing" ? 2 : 3

/**
 * The safety sweep's period: every followed job is re-read once in it, in case a hint was lost
 * (a dropped LISTEN connection). The sweep is spread over SWEEP_SLOTS steps, each re-reading the
 * jobs of one slot, so 10,000 followed jobs cost a few reads at a time rather than a burst.
 */
export const SWEEP_PERIOD = Duration.seconds(30)
const SWEEP_SLOTS = 30

/**
 * Followed jobs read in one statement. The reader reads one batch at a time: they are background
 * reads sharing the store's pool with requests, and a burst of them (a sweep slot, every job
 * after a lost LISTEN connection) must take one connection at a time, leaving the rest to requests.
 */
const READ_BATCH = 500

/**
 * Jobs due in the sweep read in one statement. Hinted jobs go first, and a hint that comes while
 * the sweep is being read waits for at most one such statement, not for a whole slot's.
 */
const SWEEP_BATCH = 100

/** The longest `Prefer: wait` honoured; longer asks are clamped to it. */
export const MAX_WAIT_SECONDS = 60

/**
 * Streams written on between two turns of the event loop, where every open one is written on at
 * once (the heartbeats, the queue places): about 10 ms of socket writes a slice.
 */
export const STREAMS_PER_TURN = 256

/**
 * A long wait (`Prefer: wait=N`, N of 10 s or more) whose job stays open is answered at a random
 * moment of its last tenth (54 to 60 s for N = 60): long-polls opened together then end, and are
 * re-issued, spread over seconds rather than as one herd on the store's pool. RFC 7240 lets a
 * server answer before the wait it was asked for; shorter waits are answered on time.
 */
const WAIT_SPREAD = 0.1
const MIN_SPREAD_SECONDS = 10

/** When a wait of `seconds` from `now` ends, `draw` in [0, 1) placing it in the spread. */
export const waitEnd = (now: number, seconds: number, draw: number): number =>
  now + seconds * 1000 - (seconds >= MIN_SPREAD_SECONDS ? Math.floor(draw * seconds * 1000 * WAIT_SPREAD) : 0)

/** How long a client refused for too many open watchers is asked to wait before it retries. */
export const WATCHERS_RETRY_AFTER_SECONDS = 5

/** Open status streams and waiting long-polls of this process (EngineConfig.maxWatchers caps them). */
export const openWatchers = Metric.gauge("genjobs_open_watchers", {
  description: "Open job watchers of this process: status streams (SSE) and waiting long-polls (Prefer: wait)."
})

/** The answer beyond the cap: the overload rule's 503 with Retry-After. */
const tooManyWatchers = (max: number): ServiceUnavailable =>
  new ServiceUnavailable({
    message: "Too many jobs are being watched on this server; retry after Retry-After",
    details: { reason: "too_many_watchers", maxWatchers: max },
    retryAfterSeconds: WATCHERS_RETRY_AFTER_SECONDS
  })

/** One follower of a job, called back from the job's shared re-reads. Callbacks must return at once. */
export interface JobListener {
  /** Each status of the job ranked above the last one given (at first above `after`), in order, as read. */
  readonly onJob: (job: Job) => void
  /**
   * The follow is over: after the terminal status was given, or on a store error (the follower
   * then resumes as after a dropped connection). Not called when the follower left first.
   */
  readonly onEnd: (error: StoreError | undefined) => void
  /**
   * For followers of the provider's progress and log (a status stream): the job as read while
   * its status stays, each time its `providerProgress` rose above `progressFrom` and what was
   * given since. Optional: a long-poll follows statuses only.
   */
  readonly onProgress?: (job: Job) => void
  readonly progressFrom?: number | undefined
  /** The job's new provider log lines, in order, those at places up to `logFrom` (then the last given) left out. */
  readonly onLogs?: (lines: ReadonlyArray<LogLine>) => void
  readonly logFrom?: number | undefined
}

interface Follower {
  seen: number
  progress: number
  logSeen: number
  readonly listener: JobListener
}

/** The followers of one job in this process: plain data in the map, read once for them all. */
interface Watch {
  readonly jobId: JobId
  readonly followers: Set<Follower>
  /** The sweep slot it is re-read in. */
  readonly slot: number
  done: boolean
}

export const make = Effect.gen(function*() {
  const repo = yield* JobRepo
  const events = yield* JobEvents
  // A store without provider logs (a host's own) streams statuses and progress only.
  const logs = yield* Effect.serviceOption(JobLogRepo)
  const { maxWatchers } = yield* EngineConfig
  const watches = new Map<JobId, Watch>()
  const slots = Array.from({ length: SWEEP_SLOTS }, () => new Set<Watch>())
  let nextSlot = 0
  let open = 0
  /** Watches to read: hinted (or joined after a hint), read first; and due in the sweep. */
  const hinted = new Set<Watch>()
  const swept = new Set<Watch>()
  const wake = yield* Queue.sliding<void>(1)
  // Open while any job is followed: an idle engine has no sweep running.
  const following = yield* Latch.make(false)
  const hints = makeHintLog<JobId>()
  // Held while any job is followed: other processes send their claims' and endings' hints only then.
  let unfollow: (() => void) | undefined
  const deadlines = yield* makeDeadlines
  // The gauge is moved from plain callbacks: it counts in the registry of the context the service was built in.
  const metrics = yield* Effect.context<never>()

  const markDirty = (watch: Watch) => {
    hinted.add(watch)
    swept.delete(watch)
    Queue.offerUnsafe(wake, undefined)
  }

  const markDue = (watch: Watch) => {
    if (hinted.has(watch)) return
    swept.add(watch)
    Queue.offerUnsafe(wake, undefined)
  }

  // One subscription for the process: a hint wakes exactly the watchers of its job (undefined: every job).
  yield* events.subscribeAll((jobId) => {
    if (jobId === undefined) {
      hints.recordAll()
      for (const watch of watches.values()) markDirty(watch)
      return
    }
    hints.record(jobId)
    const watch = watches.get(jobId)
    if (watch !== undefined) markDirty(watch)
  })

  const drop = (watch: Watch) => {
    watch.done = true
    hinted.delete(watch)
    swept.delete(watch)
    slots[watch.slot]!.delete(watch)
    if (watches.get(watch.jobId) === watch) watches.delete(watch.jobId)
    if (watches.size === 0) {
      following.closeUnsafe()
      unfollow?.()
      unfollow = undefined
    }
  }

  const deliver = (watch: Watch, found: Option.Option<Job>, lines: ReadonlyArray<LogLine>) => {
    // A job gone from the store (none) tells nothing; the next hint or sweep reads again.
    if (Option.isNone(found)) return
    const job = found.value
    const rank = statusRank(job.status)
    const progress = job.providerProgress ?? -1
    for (const follower of watch.followers) {
      const { listener } = follower
      // Lines first: a terminal status ends the follow.
      if (listener.onLogs !== undefined && lines.length > 0 && lines[lines.length - 1]!.seq > follower.logSeen) {
        const fresh = lines.filter((line) => line.seq > follower.logSeen)
        follower.logSeen = fresh[fresh.length - 1]!.seq
        listener.onLogs(fresh)
      }
      if (rank > follower.seen) {
        follower.seen = rank
        follower.progress = Math.max(follower.progress, progress)
        listener.onJob(job)
      } else if (listener.onProgress !== undefined && progress > follower.progress) {
        follower.progress = progress
        listener.onProgress(job)
      }
    }
    if (!isTerminal(job.status)) return
    drop(watch)
    for (const follower of watch.followers) follower.listener.onEnd(undefined)
  }

  /** Gives each watcher its job as read; a listener that throws loses its job's follow, never the reader. */
  const deliverAll = (batch: ReadonlyArray<Watch>, jobs: ReadonlyArray<Job>, lines: ReadonlyMap<JobId, ReadonlyArray<LogLine>>) => {
    const byId = new Map<JobId, Job>()
    for (const job of jobs) byId.set(job.id, job)
    const failed: Array<unknown> = []
    for (const watch of batch) {
      if (watch.done) continue
      try {
        deliver(watch, Option.fromNullishOr(byId.get(watch.jobId)), lines.get(watch.jobId) ?? [])
      } catch (error) {
        failed.push(error)
        drop(watch)
      }
    }
    return failed.length === 0 ? Effect.void : Effect.logError("a job follower failed", failed)
  }

  /** One statement for a chunk of watched jobs; a store error ends those follows (their followers resume). */
  const readChunk = (chunk: ReadonlyArray<Watch>) => {
    const live = chunk.filter((watch) => !watch.done)
    if (live.length === 0) return Effect.void
    return Effect.matchEffect(repo.getMany(live.map((watch) => watch.jobId)), {
      onSuccess: (jobs) => Effect.flatMap(newLines(live, jobs), (lines) => deliverAll(live, jobs, lines)),
      onFailure: (error) =>
        Effect.andThen(
          Effect.sync(() => {
            for (const watch of live) {
              if (watch.done) continue
              drop(watch)
              for (const follower of watch.followers) follower.listener.onEnd(error)
            }
          }),
          // Once for the chunk, not once per follower: one failed read ends many follows.
          Effect.logWarning(`job follows ended by a store error (${live.length} jobs); their followers resume`, error)
        )
    })
  }

  /**
   * The new provider log lines of the jobs read, for their followers of logs: one read per job
   * whose log grew past what its followers were given, none otherwise. A failed read leaves the
   * lines to the next hint or sweep.
   */
  const newLines = (batch: ReadonlyArray<Watch>, jobs: ReadonlyArray<Job>): Effect.Effect<ReadonlyMap<JobId, ReadonlyArray<LogLine>>> => {
    const found = new Map<JobId, ReadonlyArray<LogLine>>()
    if (Option.isNone(logs)) return Effect.succeed(found)
    const byId = new Map<JobId, Job>()
    for (const job of jobs) byId.set(job.id, job)
    const reads: Array<{ readonly jobId: JobId; readonly after: number }> = []
    for (const watch of batch) {
      const stored = byId.get(watch.jobId)?.providerLog?.lines ?? 0
      let after = Infinity
      for (const follower of watch.followers) if (follower.listener.onLogs !== undefined) after = Math.min(after, follower.logSeen)
      if (after < stored) reads.push({ jobId: watch.jobId, after })
    }
    return Effect.as(
      Effect.forEach(reads, ({ after, jobId }) =>
        logs.value.lines(jobId, after, MAX_LOG_LINES).pipe(
          Effect.map((lines) => void found.set(jobId, lines)),
          Effect.catch((error) => Effect.logWarning("a followed job's log lines could not be read", { jobId }, error.message))
        ), { discard: true }),
      found
    )
  }

  /** Up to `max` watches taken out of `from`, in insertion order. */
  const takeFrom = (from: Set<Watch>, max: number): Array<Watch> => {
    const batch: Array<Watch> = []
    for (const watch of from) {
      if (batch.length === max) break
      batch.push(watch)
    }
    for (const watch of batch) from.delete(watch)
    return batch
  }

  /** Reads until nothing is left to read: hinted jobs first, then the sweep's, a statement at a time. */
  const readAll: Effect.Effect<void> = Effect.suspend(() => {
    const batch = hinted.size > 0 ? takeFrom(hinted, READ_BATCH) : takeFrom(swept, SWEEP_BATCH)
    return batch.length === 0 ? Effect.void : Effect.andThen(readChunk(batch), readAll)
  })

  // The reader: every job hinted (or due in the sweep, or joined after a hint) since it last
  // looked, read once for all its followers.
  yield* Queue.take(wake).pipe(
    Effect.andThen(readAll),
    Effect.forever,
    Effect.forkScoped
  )

  // The safety sweep: one slot's jobs per step, so each followed job is re-read once per SWEEP_PERIOD.
  const step = Duration.toMillis(SWEEP_PERIOD) / SWEEP_SLOTS
  let sweepSlot = 0
  yield* following.await.pipe(
    Effect.andThen(Effect.sleep(step)),
    Effect.andThen(Effect.sync(() => {
      sweepSlot = (sweepSlot + 1) % SWEEP_SLOTS
      for (const watch of slots[sweepSlot]!) markDue(watch)
    })),
    Effect.forever,
    Effect.forkScoped
  )

  /**
   * Adds a follower of `jobId`; returns the function that removes it, or the refusal when this
   * process already holds `maxWatchers`. `since` is `hintMark` taken before the caller read the
   * job: the job is read again at once only when a hint for it came after that mark (the caller's
   * read may have missed that change); without a mark it is read at once.
   */
  const add = (jobId: JobId, after: number, listener: JobListener, since: number | undefined): (() => void) | ServiceUnavailable => {
    if (open >= maxWatchers) return tooManyWatchers(maxWatchers)
    let watch = watches.get(jobId)
    if (watch === undefined) {
      watch = { jobId, followers: new Set(), slot: nextSlot, done: false }
      nextSlot = (nextSlot + 1) % SWEEP_SLOTS
      watches.set(jobId, watch)
      slots[watch.slot]!.add(watch)
      following.openUnsafe()
      unfollow ??= events.follow()
    }
    const follower: Follower = { seen: after, progress: listener.progressFrom ?? -1, logSeen: listener.logFrom ?? 0, listener }
    watch.followers.add(follower)
    open++
    openWatchers.modifyUnsafe(1, metrics)
    if (since === undefined || hints.since(jobId, since)) markDirty(watch)
    const joined = watch
    let removed = false
    return () => {
      if (removed) return
      removed = true
      open--
      openWatchers.modifyUnsafe(-1, metrics)
      joined.followers.delete(follower)
      if (!joined.done && joined.followers.size === 0) drop(joined)
    }
  }

  /**
   * Reads of jobs about to be watched (a status stream's or a long-poll's own read of its job),
   * asked by many requests at once (a dashboard opening a stream per job), one statement for
   * all those asked while the previous one was on its way: 10,000 opens together cost the store
   * 20 statements, not 10,000 reads each waiting for a connection of the pool.
   */
  // A failed statement is every asker's failure (the batcher would retry it id by id, which for
  // a read that failed as a whole only multiplies the failure): hence Result, never a failure.
  const readMany = yield* makeWriteBatcher((ids: ReadonlyArray<JobId>) =>
    Effect.result(repo.getMany(ids)).pipe(Effect.map((read): ReadonlyArray<Result.Result<Option.Option<Job>, StoreError>> => {
      if (Result.isFailure(read)) return ids.map(() => Result.fail(read.failure))
      const byId = new Map<JobId, Job>()
      for (const job of read.success) byId.set(job.id, job)
      return ids.map((id) => Result.succeed(Option.fromNullishOr(byId.get(id))))
    })), { maxBatch: READ_BATCH })
  let reading = 0

  /**
   * The job, read for a watcher about to join (see `readMany`). Refused as `add` refuses when
   * `maxWatchers` are open, and when as many reads are under way, so a herd of opens cannot
   * queue without bound (not when both together pass it: a herd's first reads would then be
   * refused for watchers about to leave).
   */
  const readForWatch = (jobId: JobId): Effect.Effect<Option.Option<Job>, StoreError | ServiceUnavailable> =>
    Effect.suspend((): Effect.Effect<Option.Option<Job>, StoreError | ServiceUnavailable> => {
      if (open >= maxWatchers || reading >= maxWatchers) return Effect.fail(tooManyWatchers(maxWatchers))
      reading++
      return Effect.ensuring(Effect.flatMap(readMany(jobId), Effect.fromResult), Effect.sync(() => reading--))
    })

  /** The mark to pass as `since`: taken before reading the job a watcher then follows. */
  const hintMark = Effect.sync(() => hints.mark())

  /**
   * Adds `listener` as a follower of the job (as `listen`) without a scope: the effect's value
   * removes it, and the caller calls it once it stops listening (a status stream's body when its
   * client leaves). After `onEnd` it is still to be called, to give back the watcher's place.
   */
  const join = (jobId: JobId, after: number, listener: JobListener, since?: number): Effect.Effect<() => void, ServiceUnavailable> =>
    Effect.suspend(() => {
      const added = add(jobId, after, listener, since)
      return typeof added === "function" ? Effect.succeed(added) : Effect.fail(added)
    })

  /**
   * Calls `listener` with the job's statuses from now on, those ranked at most `after` left
   * out, until the terminal one or until the scope closes (a request's own scope). Every
   * follower of a job in this process shares one re-read: on each hint for the job, in the
   * slow sweep, and on joining (see `add` for `since`). Refused with 503 and Retry-After beyond
   * EngineConfig.maxWatchers.
   */
  const listen = (jobId: JobId, after: number, listener: JobListener, since?: number): Effect.Effect<void, ServiceUnavailable, Scope.Scope> =>
    Effect.flatMap(
      Effect.sync(() => add(jobId, after, listener, since)),
      (added) => typeof added === "function" ? Effect.addFinalizer(() => Effect.sync(added)) : Effect.fail(added)
    )

  /**
   * The job's statuses from now on, each once, those ranked at most `after` left out, ending
   * with the first terminal one. A Stream over `listen`, for callers that want one.
   */
  const follow = (job: Job, after = 0): Stream.Stream<Job, StoreError | ServiceUnavailable> =>
    Stream.callback<Job, StoreError | ServiceUnavailable>((queue) =>
      listen(job.id, after, {
        onJob: (current) => void Queue.offerUnsafe(queue, current),
        onEnd: (error) => void (error === undefined ? Queue.endUnsafe(queue) : Queue.failCauseUnsafe(queue, Cause.fail(error)))
      })
    )

  /**
   * The job once terminal, or as it is after `seconds` (a long-poll). The wait is a callback in
   * the job's watch and one entry in the shared deadlines: no fiber, scope or store connection
   * is held while it waits.
   */
  const awaitTerminal = (job: Job, seconds: number, since?: number): Effect.Effect<Job, StoreError | ServiceUnavailable> =>
    isTerminal(job.status) ? Effect.succeed(job) : Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Random.next), ([now, draw]) =>
      Effect.callback<Job, StoreError | ServiceUnavailable>((resume) => {
        let latest = job
        let settled = false
        let cancelDeadline: () => void = () => undefined
        let remove: () => void = () => undefined
        const settle = (error: StoreError | undefined) => {
          if (settled) return
          settled = true
          cancelDeadline()
          remove()
          resume(error === undefined ? Effect.succeed(latest) : Effect.fail(error))
        }
        const added = add(job.id, statusRank(job.status), {
          onJob: (current) => {
            latest = current
          },
          onEnd: settle
        }, since)
        if (typeof added !== "function") return resume(Effect.fail(added))
        remove = added
        cancelDeadline = deadlines.add(waitEnd(now, seconds, draw), () => settle(undefined))
        return Effect.sync(() => {
          settled = true
          cancelDeadline()
          remove()
        })
      }))

  // The watcher's use cases by name, a span each: one per status stream or long-poll opened,
  // a few µs against a watch of seconds. `follow` is a Stream over `listen`; `hintMark` a read of a counter.
  return {
    join: Effect.fn("JobFollow.join")(join),
    listen: Effect.fn("JobFollow.listen")(listen),
    follow,
    awaitTerminal: Effect.fn("JobFollow.awaitTerminal")(awaitTerminal),
    hintMark,
    readForWatch: Effect.fn("JobFollow.readForWatch")(readForWatch),
    openCount: () => open
  } as const
})

export class JobFollow extends Context.Service<JobFollow, Effect.Success<typeof make>>()("genjobs/JobFollow") {
  static readonly layer = Layer.effect(JobFollow, make)
}
