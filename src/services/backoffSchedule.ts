import { Duration, Effect, Random, Schedule } from "effect"
import { type Backoff, backoffDelayMs } from "../domain/backoff.js"

/**
 * backoffDelayMs as a Schedule over the errors it retries: full jitter below the capped
 * exponential ceiling, never sooner than the error's Retry-After. It never stops by itself:
 * callers bound it (a count, a deadline, a lease).
 */
export const backoff = <E>(settings: Backoff, retryAfterOf: (error: E) => number | undefined = () => undefined) =>
  Schedule.intersect(Schedule.forever, Schedule.identity<E>()).pipe(
    Schedule.addDelayEffect(([attempt, error]) =>
      Effect.map(Random.next, (random) => Duration.millis(backoffDelayMs(settings, attempt, random, retryAfterOf(error)))))
  )
