import { Clock, Context, Deferred, Duration, Effect, Exit, Layer, Option, Queue, Scope, Stream } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import { isTerminal, type Job, type JobStatus } from "../domain/job.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"

/**
 * A job's place in its status sequence: pending 1, processing 2, a terminal status 3. Statuses
 * only move forward, so this numbers the status stream's events: a follower that saw event n
 * resumes after it (Last-Event-ID) without seeing it again.
 */
export const statusRank = (status: JobStatus): number =>
  status === "pending" ? 1 : status === "processing" ? 2 : 3

/** The backstop re-read: hints can be lost (a dropped LISTEN connection). */
export const FOLLOW_TICK = Duration.seconds(5)

/** How often followed jobs are checked for a due backstop re-read: each is re-read 5 to 5.5 s after its last read. */
const BACKSTOP_CHECK = Duration.millis(500)

/** Reads of followed jobs made at once; more dirty jobs wait for a free one. */
const READ_CONCURRENCY = 16

/** The longest `Prefer: wait` honoured; longer asks are clamped to it. */
export const MAX_WAIT_SECONDS = 60

/** One follower of a job, called back from the job's shared re-reads. Callbacks must return at once. */
export interface JobListener {
  /** Each status of the job ranked above the last one given (at first above `after`), in order, as read. */
  readonly onJob: (job: Job) => void
  /**
   * The follow is over: after the terminal status was given, or on a store error (the follower
   * then resumes as after a dropped connection). Not called when the listener's scope closes first.
   */
  readonly onEnd: (error: StoreError | undefined) => void
}

interface Follower {
  seen: number
  readonly listener: JobListener
}

/** The followers of one job in this process: one hint subscription and one re-read for them all. */
interface Watch {
  readonly jobId: JobId
  readonly followers: Set<Follower>
  readonly scope: Scope.CloseableScope
  /** When the last read started; the backstop re-reads 5 s after it. */
  lastRead: number
  done: boolean
}

export const make = Effect.gen(function*() {
  const repo = yield* JobRepo
  const events = yield* JobEvents
  const watches = new Map<JobId, Watch>()
  const dirty = new Set<Watch>()
  const wake = yield* Queue.sliding<void>(1)
  // Open while any job is followed: an idle engine has no timer running.
  const following = yield* Effect.makeLatch(false)

  const markDirty = (watch: Watch) => {
    dirty.add(watch)
    Queue.unsafeOffer(wake, undefined)
  }

  const drop = (watch: Watch) =>
    Effect.suspend(() => {
      watch.done = true
      dirty.delete(watch)
      if (watches.get(watch.jobId) === watch) watches.delete(watch.jobId)
      if (watches.size === 0) following.unsafeClose()
      return Scope.close(watch.scope, Exit.void)
    })

  const deliver = (watch: Watch, found: Option.Option<Job>) => {
    // A job gone from the store (none) tells nothing; the next hint or tick reads again.
    if (Option.isNone(found)) return Effect.void
    const job = found.value
    const rank = statusRank(job.status)
    for (const follower of watch.followers) {
      if (rank > follower.seen) {
        follower.seen = rank
        follower.listener.onJob(job)
      }
    }
    if (!isTerminal(job.status)) return Effect.void
    for (const follower of watch.followers) follower.listener.onEnd(undefined)
    return drop(watch)
  }

  const read = (watch: Watch) =>
    Effect.gen(function*() {
      if (watch.done) return
      watch.lastRead = yield* Clock.currentTimeMillis
      const found = yield* Effect.either(repo.get(watch.jobId))
      if (watch.done) return
      if (found._tag === "Right") return yield* deliver(watch, found.right)
      for (const follower of watch.followers) follower.listener.onEnd(found.left)
      yield* drop(watch)
    })

  // The reader: every job hinted (or due, or newly followed) since it last looked, read once for all its followers.
  yield* Queue.take(wake).pipe(
    Effect.zipRight(Effect.suspend(() => {
      const batch = [...dirty]
      dirty.clear()
      // A listener that throws loses its job's follow, never the reader every follow depends on.
      return Effect.forEach(batch, (watch) =>
        read(watch).pipe(
          Effect.catchAllCause((cause) => Effect.zipRight(Effect.logError("a job follower failed", cause), drop(watch)))
        ), { concurrency: READ_CONCURRENCY, discard: true })
    })),
    Effect.forever,
    Effect.forkScoped
  )

  // The backstop: a job not read for 5 s is read again, in case a hint was lost.
  const tick = FOLLOW_TICK.pipe(Duration.toMillis)
  yield* following.await.pipe(
    Effect.zipRight(Effect.sleep(BACKSTOP_CHECK)),
    Effect.zipRight(Clock.currentTimeMillis),
    Effect.tap((now) =>
      Effect.sync(() => {
        for (const watch of watches.values()) if (now - watch.lastRead >= tick) markDirty(watch)
      })
    ),
    Effect.forever,
    Effect.forkScoped
  )

  const watchOf = (jobId: JobId) =>
    Effect.gen(function*() {
      const existing = watches.get(jobId)
      if (existing !== undefined) return existing
      const scope = yield* Scope.make()
      const watch: Watch = { jobId, followers: new Set(), scope, lastRead: 0, done: false }
      watches.set(jobId, watch)
      following.unsafeOpen()
      yield* Scope.extend(events.subscribe(jobId, () => markDirty(watch)), scope)
      return watch
    })

  /**
   * Calls `listener` with the job's statuses from now on, those ranked at most `after` left
   * out, until the terminal one or until the scope closes. Every follower of a job in this
   * process shares one hint subscription and one re-read: on each hint, every 5 s, and when a
   * follower joins (its first status comes from a read made after it joined, so no change
   * falls between). The last follower to leave ends them.
   */
  const listen = (jobId: JobId, after: number, listener: JobListener): Effect.Effect<void, never, Scope.Scope> =>
    Effect.acquireRelease(
      Effect.gen(function*() {
        const watch = yield* watchOf(jobId)
        const follower: Follower = { seen: after, listener }
        watch.followers.add(follower)
        markDirty(watch)
        return [watch, follower] as const
      }),
      ([watch, follower]) =>
        Effect.suspend(() => {
          watch.followers.delete(follower)
          return watch.done || watch.followers.size > 0 ? Effect.void : drop(watch)
        })
    ).pipe(Effect.asVoid)

  /**
   * The job's statuses from now on, each once, those ranked at most `after` left out, ending
   * with the first terminal one. A Stream over `listen`, for callers that want one.
   */
  const follow = (job: Job, after = 0): Stream.Stream<Job, StoreError> =>
    Stream.asyncScoped<Job, StoreError>((emit) =>
      listen(job.id, after, {
        onJob: (current) => void emit.single(current),
        onEnd: (error) => void (error === undefined ? emit.end() : emit.fail(error))
      })
    )

  /** The job once terminal, or as it is after `seconds` (a long-poll). */
  const awaitTerminal = (job: Job, seconds: number): Effect.Effect<Job, StoreError> =>
    isTerminal(job.status) ? Effect.succeed(job) : Effect.scoped(Effect.gen(function*() {
      let latest = job
      const ended = yield* Deferred.make<void, StoreError>()
      yield* listen(job.id, 0, {
        onJob: (current) => {
          latest = current
        },
        onEnd: (error) => Deferred.unsafeDone(ended, error === undefined ? Exit.void : Exit.fail(error))
      })
      yield* Deferred.await(ended).pipe(Effect.timeoutOption(Duration.seconds(seconds)))
      return latest
    }))

  return { listen, follow, awaitTerminal } as const
})

export class JobFollow extends Context.Tag("genjobs/JobFollow")<JobFollow, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.scoped(JobFollow, make)
}
