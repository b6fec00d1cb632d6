import { Deferred, Effect } from "effect"

/**
 * One read for a herd: while a read of a key is on its way, callers asking for the same key wait
 * for its answer instead of reading too. Requests opened together with one key from one address
 * (a dashboard opening a status stream per job) then cost the store one key read and one
 * throttle read when their cached entries run out, not one each, and none is shed for waiting
 * behind the others' identical reads. The read runs uninterruptibly, so that its waiters always
 * get its answer (its caller's client leaving does not fail the others).
 */
export const makeSingleFlight = <K, A, E>() => {
  const reading = new Map<K, Deferred.Deferred<A, E>>()
  return (key: K, read: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.suspend(() => {
      const pending = reading.get(key)
      if (pending !== undefined) return Deferred.await(pending)
      const done = Deferred.makeUnsafe<A, E>()
      reading.set(key, done)
      return Effect.uninterruptible(Effect.onExit(read, (exit) =>
        Effect.sync(() => {
          reading.delete(key)
          Deferred.doneUnsafe(done, exit)
        })))
    })
}
