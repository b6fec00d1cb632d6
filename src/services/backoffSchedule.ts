import { Duration, Effect, Random, Schedule } from "effect"
import { type Backoff, backoffDelayMs } from "../domain/backoff.js"

/**
 * backoffDelayMs as a Schedule over the errors it retries: full jitter below the capped
 * exponential ceiling, never sooner than the error's Retry-After. It never stops by itself:
 * callers bound it (a count, a deadline, a lease).
 */
export const backoff = <E>(settings: Backoff, retryAfterOf: (error: E) => number | undefined = () => undefined): Schedule.Schedule<number, E> =>
  Schedule.forever.pipe(
    Schedule.setInputType<E>(),
    // forever's output counts the retries from 0: the attempt backoffDelayMs takes.
    Schedule.addDelay(({ input, output }) =>
      Effect.map(Random.next, (random) => Duration.millis(backoffDelayMs(settings, output, random, retryAfterOf(input)))))
  )
