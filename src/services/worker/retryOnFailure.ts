import { Effect, type Schedule } from "effect"

/** How retryOnFailure retries: made only once a try failed. */
export interface RetryPolicy<E, Out, R> {
  readonly schedule: Schedule.Schedule<Out, E, never, R>
  readonly while: (error: E) => boolean
}

/**
 * Effect.retry for a hot path: nothing of the retry (its policy, its schedule's driver) is
 * built while `effect` succeeds, only once a try failed with an error the policy retries. The
 * retries then run as Effect.retry's would have after that first failure: the schedule's first
 * delay, then `effect` again.
 */
export const retryOnFailure = <A, E, R, Out, R2>(
  effect: Effect.Effect<A, E, R>,
  policy: () => RetryPolicy<E, Out, R2>
): Effect.Effect<A, E, R | R2> =>
  Effect.catch(effect, (first) => {
    const options = policy()
    if (!options.while(first)) return Effect.fail(first)
    // Effect.retry runs its effect before its schedule: the first run fails with the error already met.
    let met = true
    const again = Effect.suspend(() => {
      if (!met) return effect
      met = false
      return Effect.fail(first)
    })
    return Effect.retry(again, options)
  })
