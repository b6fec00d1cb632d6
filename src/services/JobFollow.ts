import { Context, Duration, Effect, Layer, Option, Stream } from "effect"
import type { StoreError } from "../domain/errors.js"
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

/** The backstop re-read: hints can be lost (a dropped LISTEN connection, the reaper's abandonments). */
export const FOLLOW_TICK = Duration.seconds(5)

/** The longest `Prefer: wait` honoured; longer asks are clamped to it. */
export const MAX_WAIT_SECONDS = 60

export const make = Effect.gen(function*() {
  const repo = yield* JobRepo
  const events = yield* JobEvents

  /**
   * The job's statuses from now on, each once, those ranked at most `after` left out, ending
   * with the first terminal one. Subscribes before the first read, so no change falls between.
   */
  const follow = (job: Job, after = 0): Stream.Stream<Job, StoreError> =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const hints = yield* events.subscribe(job.id)
      // Stream.tick fires at once, which makes the first read.
      return Stream.merge(hints, Stream.tick(FOLLOW_TICK)).pipe(
        Stream.mapEffect(() => repo.get(job.id)),
        Stream.filterMap((found) => found),
        // Ends on a terminal read even when it was seen already (a resume after the last event).
        Stream.takeUntil((current) => isTerminal(current.status)),
        Stream.mapAccum(after, (seen, current) => {
          const rank = statusRank(current.status)
          return rank > seen ? [rank, Option.some(current)] : [seen, Option.none<Job>()]
        }),
        Stream.filterMap((changed) => changed)
      )
    }))

  /** The job once terminal, or as it is after `seconds` (a long-poll). */
  const awaitTerminal = (job: Job, seconds: number): Effect.Effect<Job, StoreError> =>
    isTerminal(job.status) ? Effect.succeed(job) : follow(job).pipe(
      Stream.interruptAfter(Duration.seconds(seconds)),
      Stream.runLast,
      Effect.map(Option.getOrElse(() => job))
    )

  return { follow, awaitTerminal } as const
})

export class JobFollow extends Context.Tag("genjobs/JobFollow")<JobFollow, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(JobFollow, make)
}
