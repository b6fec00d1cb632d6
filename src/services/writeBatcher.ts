import { Deferred, Effect, Exit, FiberId, FiberSet, type Scope } from "effect"

/** Writes of separate jobs sent together at most; a worker process runs tens of jobs at once. */
const MAX_WRITE_BATCH = 100

interface Pending<I, O, E> {
  readonly item: I
  readonly done: Deferred.Deferred<O, E>
}

/**
 * Writes asked for by many fibers at once, sent to the store together. The first write goes at
 * once; those asked for while it is on its way go together in the next, up to `maxBatch`, and so
 * on: no write waits for a timer, and a busy store gets one statement for many jobs instead of
 * one each. A batch that fails is written again item by item, so one bad item fails alone and
 * never its neighbours.
 *
 * The batches run in a fiber of the scope the batcher is made in (not the caller's), so an
 * interrupted caller never stops the others' writes, and closing that scope stops the writer:
 * the batch on its way is interrupted, and it and every write still queued end interrupted, so
 * no caller waits forever; a write asked for after the close is interrupted at once.
 */
export const makeWriteBatcher = <I, O, E>(
  writeMany: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>,
  maxBatch: number = MAX_WRITE_BATCH
): Effect.Effect<(item: I) => Effect.Effect<O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const writer = yield* FiberSet.make<void>()
    const queued: Array<Pending<I, O, E>> = []
    let inFlight: ReadonlyArray<Pending<I, O, E>> = []
    let writing = false
    let closed = false
    // Added after the FiberSet, so it runs before the set interrupts the writer: no write is queued after.
    yield* Effect.addFinalizer(() => Effect.sync(() => { closed = true }))

    const settle = (batch: ReadonlyArray<Pending<I, O, E>>, exit: Exit.Exit<ReadonlyArray<O>, E>) =>
      Effect.forEach(batch, ({ done }, i) =>
        Deferred.done(done, Exit.map(exit, (outputs) => outputs[i]!)))

    /** The next batch, or none: then the writer stops, in the same step, so no item is left behind. */
    const nextBatch = Effect.sync(() => {
      inFlight = []
      if (queued.length === 0) {
        writing = false
        return undefined
      }
      inFlight = queued.splice(0, maxBatch)
      return inFlight
    })

    /** On the scope's close: every write not answered yet ends interrupted (answered ones stay as they are). */
    const abandon = Effect.suspend(() => {
      const left = [...inFlight, ...queued.splice(0)]
      inFlight = []
      writing = false
      return Effect.forEach(left, ({ done }) => Deferred.interrupt(done), { discard: true })
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
    }).pipe(Effect.onInterrupt(() => abandon))

    return (item) =>
      Effect.suspend(() => {
        if (closed) return Effect.interrupt
        const done = Deferred.unsafeMake<O, E>(FiberId.none)
        queued.push({ item, done })
        if (writing) return Deferred.await(done)
        writing = true
        return Effect.zipRight(FiberSet.run(writer, drain), Deferred.await(done))
      })
  })
