import { Effect, type Schedule } from "effect"

/** How retryOnFailure retries: made only once a try failed. */
export interface RetryPolicy<E, Out, R> {
  readonly schedule: Schedule.Schedule<Out, E, never, R>
  readonly while: (error: E) => boolean
}

/**
 * `effect` again, once a try of it already failed with `first`: its first run fails with
 * `first`, each later run runs `effect`. A retry pipeline built over it, in a catch of `effect`,
 * sees the same tries as one built over `effect`, and costs nothing while `effect` succeeds.
 */
export const afterFailure = <A, E, R>(first: E, effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  let met = true
  return Effect.suspend(() => {
    if (!met) return effect
    met = false
    return Effect.fail(first)
  })
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
    // Effect.retry runs its effect before its schedule: the first run fails with the error already met.
    return options.while(first) ? Effect.retry(afterFailure(first, effect), options) : Effect.fail(first)
  })
