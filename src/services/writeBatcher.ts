import { Deferred, Effect, Exit, FiberId } from "effect"

/** Writes of separate jobs sent together at most; a worker process runs tens of jobs at once. */
const MAX_WRITE_BATCH = 100

/**
 * Writes asked for by many fibers at once, sent to the store together. The first write goes at
 * once; those asked for while it is on its way go together in the next, up to `maxBatch`, and so
 * on: no write waits for a timer, and a busy store gets one statement for many jobs instead of
 * one each. The batches run in a daemon fiber of their own, so an interrupted caller never stops
 * the others' writes. A batch that fails is written again item by item, so one bad item fails
 * alone and never its neighbours.
 */
export const makeWriteBatcher = <I, O, E>(
  writeMany: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>,
  maxBatch: number = MAX_WRITE_BATCH
): ((item: I) => Effect.Effect<O, E>) => {
  const queued: Array<{ readonly item: I; readonly done: Deferred.Deferred<O, E> }> = []
  let writing = false

  const settle = (batch: ReadonlyArray<{ readonly done: Deferred.Deferred<O, E> }>, exit: Exit.Exit<ReadonlyArray<O>, E>) =>
    Effect.forEach(batch, ({ done }, i) =>
      Deferred.done(done, Exit.map(exit, (outputs) => outputs[i]!)))

  /** The next batch, or none: then the writer stops, in the same step, so no item is left behind. */
  const nextBatch = Effect.sync(() => {
    if (queued.length === 0) {
      writing = false
      return undefined
    }
    return queued.splice(0, maxBatch)
  })

  const drain = Effect.gen(function*() {
    for (let batch = yield* nextBatch; batch !== undefined; batch = yield* nextBatch) {
      const exit = yield* Effect.exit(writeMany(batch.map((entry) => entry.item)))
      if (Exit.isSuccess(exit) || batch.length === 1) {
        yield* settle(batch, exit)
        continue
      }
      for (const entry of batch) yield* settle([entry], yield* Effect.exit(writeMany([entry.item])))
    }
  })

  return (item) =>
    Effect.suspend(() => {
      const done = Deferred.unsafeMake<O, E>(FiberId.none)
      queued.push({ item, done })
      if (writing) return Deferred.await(done)
      writing = true
      return Effect.zipRight(Effect.forkDaemon(drain), Deferred.await(done))
    })
}
