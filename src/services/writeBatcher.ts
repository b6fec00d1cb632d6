import { Effect, Exit, type Scope } from "effect"

/** Writes of separate jobs sent together at most; a worker process runs tens of jobs at once. */
const MAX_WRITE_BATCH = 100

interface Pending<I, O, E> {
  readonly item: I
  /** Resumes the caller with its answer (a callback, not a Deferred: fewer steps per write). */
  readonly done: (answer: Effect.Effect<O, E>) => void
}

/** A write batcher: asks for a write, answered once its batch is written. */
export interface WriteBatcher<I, O, E> {
  (item: I): Effect.Effect<O, E>
  /** Whether a write asked for and not yet answered (queued, or in the batch on its way) passes `test`. */
  readonly pending: (test: (item: I) => boolean) => boolean
}

export interface WriteBatcherOptions<I> {
  /** The most writes in one batch (100). */
  readonly maxBatch?: number | undefined
  /**
   * Asked with the first write queued (and again as each write arrives): how many milliseconds
   * the queued writes may still wait for more, 0 to send them now.
   */
  readonly hold?: ((first: I) => number) | undefined
  /**
   * The batch is taken a scheduler turn after the first write wakes the writer, so the writes of
   * the fibers woken with that one's (by one offer, or by one answer) go in it too. Without it a
   * webhook claim's first attempt went alone on PostgreSQL (its runner ran to its record before
   * the other fifteen were resumed) and the fifteen a round trip later: two statements, one after
   * the other, before the next claim. The jobs' batchers go without it: the completions' showed
   * no gain in a drain, and the provider states' writes then moved past the TestClock steps of
   * the worker's tests (docs/decisions.md, "A claim's webhook outcomes go in one statement").
   */
  readonly gatherTurn?: boolean | undefined
}

/**
 * Writes asked for by many fibers at once, sent to the store together. The first write goes at
 * once (with `gatherTurn`, with those asked for in the same scheduler turn); those asked for while
 * it is on its way go together in the next, up to `maxBatch`, and so on: a busy store gets one
 * statement for many jobs instead of one each. No write waits for a timer unless `hold` says more
 * are about to come: then the batch waits for them, that long at most. A batch that fails is
 * written again item by item, so one bad item fails alone and never its neighbours.
 *
 * The batches are written by one long-lived fiber of the scope the batcher is made in (not the
 * caller's, and not one per burst of writes): an interrupted caller never stops the others'
 * writes, and closing that scope stops the writer: the batch on its way is interrupted, and it
 * and every write still queued end interrupted, so no caller waits forever; a write asked for
 * after the close is interrupted at once.
 */
export const makeWriteBatcher = <I, O, E>(
  writeMany: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>,
  options: WriteBatcherOptions<I> = {}
): Effect.Effect<WriteBatcher<I, O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { gatherTurn = false, hold, maxBatch = MAX_WRITE_BATCH } = options
    const queued: Array<Pending<I, O, E>> = []
    let inFlight: ReadonlyArray<Pending<I, O, E>> = []
    /** The batch on its way until its write returns, as `pending` counts it (inFlight stays for `abandon` until answered). */
    let sent: ReadonlyArray<Pending<I, O, E>> = []
    let closed = false
    /** Resumes the writer when it waits for a write. */
    let wake: (() => void) | undefined

    const settle = (batch: ReadonlyArray<Pending<I, O, E>>, exit: Exit.Exit<ReadonlyArray<O>, E>) =>
      Effect.sync(() => batch.forEach(({ done }, i) => done(Exit.map(exit, (outputs) => outputs[i]!))))

    /**
     * The next batch, once there is a write to send and `hold` (asked again as each write arrives)
     * lets it go: the first hold's milliseconds at most, one timer per batch.
     */
    const nextBatch = Effect.callback<ReadonlyArray<Pending<I, O, E>>>((resume) => {
      let timer: ReturnType<typeof setTimeout> | undefined
      const take = () => {
        if (timer !== undefined) clearTimeout(timer)
        wake = undefined
        if (gatherTurn) {
          return resume(Effect.andThen(Effect.yieldNow, Effect.sync(() => (inFlight = sent = queued.splice(0, maxBatch)))))
        }
        inFlight = sent = queued.splice(0, maxBatch)
        resume(Effect.succeed(inFlight))
      }
      const consider = () => {
        const ms = hold === undefined || queued.length >= maxBatch ? 0 : hold(queued[0]!.item)
        if (ms <= 0) return take()
        wake = consider
        timer ??= setTimeout(take, ms)
      }
      if (queued.length > 0) consider()
      else wake = consider
      return Effect.sync(() => {
        wake = undefined
        if (timer !== undefined) clearTimeout(timer)
      })
    })

    /** On the scope's close: every write not answered yet ends interrupted (answered ones stay as they are). */
    const abandon = Effect.suspend(() => {
      const left = [...inFlight, ...queued.splice(0)]
      inFlight = sent = []
      return Effect.sync(() => left.forEach(({ done }) => done(Effect.interrupt)))
    })

    const writer = Effect.forever(Effect.gen(function*() {
      const batch = yield* nextBatch
      const exit = yield* Effect.exit(writeMany(batch.map((entry) => entry.item)))
      // No longer pending before any answer: an answer resumes its caller on this stack, and a
      // caller asking `pending` then (a riding claim's wake) must not wait for a write gone.
      // Items written again one by one below count as answered already: `pending` may say no
      // too early, never yes too late.
      sent = []
      if (Exit.isSuccess(exit) || batch.length === 1) yield* settle(batch, exit)
      else for (const entry of batch) yield* settle([entry], yield* Effect.exit(writeMany([entry.item])))
      inFlight = []
      // Lets the fibers woken by the answers, and those about to write, queue theirs first: the next batch takes them together.
      yield* Effect.yieldNow
    })).pipe(Effect.onInterrupt(() => abandon))
    yield* Effect.forkScoped(writer)
    // Added after the writer, so it runs before the writer is interrupted: no write is queued after.
    yield* Effect.addFinalizer(() => Effect.sync(() => (closed = true)))

    const write = (item: I) =>
      Effect.callback<O, E>((done) => {
        if (closed) return done(Effect.interrupt)
        queued.push({ item, done })
        wake?.()
      })
    return Object.assign(write, {
      pending: (test: (item: I) => boolean) => sent.some((entry) => test(entry.item)) || queued.some((entry) => test(entry.item))
    })
  })

/**
 * Items handed off by many fibers and written by one long-lived fiber of the scope it is made
 * in, the caller never waiting: the first goes at once, those queued while it is on its way go
 * together in the next (up to `maxBatch`), as makeWriteBatcher does. For writes whose outcome
 * no caller waits on: `writeMany` handles its own failures. Closing the scope stops the writer,
 * and what is queued then is dropped.
 */
export const makeBackgroundWriter = <I>(
  writeMany: (items: ReadonlyArray<I>) => Effect.Effect<void>,
  maxBatch: number = MAX_WRITE_BATCH
): Effect.Effect<(item: I) => void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queued: Array<I> = []
    /** Resumes the writer when it waits for an item. */
    let wake: (() => void) | undefined
    const nextBatch = Effect.callback<ReadonlyArray<I>>((resume) => {
      const take = () => {
        wake = undefined
        resume(Effect.succeed(queued.splice(0, maxBatch)))
      }
      if (queued.length > 0) return take()
      wake = take
      return Effect.sync(() => {
        wake = undefined
      })
    })
    yield* Effect.forkScoped(Effect.forever(Effect.flatMap(nextBatch, writeMany)))
    return (item) => {
      queued.push(item)
      wake?.()
    }
  })
