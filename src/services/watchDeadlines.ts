import { Clock, Effect, Latch } from "effect"

/** Deadlines fire at most this late: a long-poll's `wait=N` is whole seconds. */
const GRAIN_MS = 100

/**
 * The deadlines of every waiting long-poll in one timer: callbacks grouped in buckets of
 * GRAIN_MS, and one fiber, running only while any is pending, that fires the buckets due.
 * A waiter is one entry in a set, not a fiber or a timer of its own.
 */
export const makeDeadlines = Effect.gen(function*() {
  const buckets = new Map<number, Set<() => void>>()
  const pending = yield* Latch.make(false)
  yield* pending.await.pipe(
    Effect.andThen(Effect.sleep(GRAIN_MS)),
    Effect.andThen(Clock.currentTimeMillis),
    Effect.tap((now) =>
      Effect.sync(() => {
        const due = Math.floor(now / GRAIN_MS)
        for (const [bucket, fires] of buckets) {
          if (bucket > due) continue
          buckets.delete(bucket)
          for (const fire of fires) fire()
        }
        if (buckets.size === 0) pending.closeUnsafe()
      })
    ),
    Effect.forever,
    Effect.forkScoped
  )
  /** Calls `fire` once `at` (epoch ms) has passed; returns the cancel. */
  const add = (at: number, fire: () => void): (() => void) => {
    const bucket = Math.ceil(at / GRAIN_MS)
    let fires = buckets.get(bucket)
    if (fires === undefined) {
      fires = new Set()
      buckets.set(bucket, fires)
    }
    fires.add(fire)
    pending.openUnsafe()
    const joined = fires
    return () => {
      joined.delete(fire)
      if (joined.size === 0 && buckets.get(bucket) === joined) buckets.delete(bucket)
    }
  }
  return { add } as const
})
