import { Context, Effect, Exit } from "effect"

/** Writes of one batch at most. */
const MAX_BATCH = 64

interface Waiting<I, O, E> {
  readonly item: I
  /** Resumes the waiting caller: with its answer, or with the next batch to lead. */
  readonly done: (answer: Effect.Effect<O, E>) => void
}

/**
 * Writes that each are one statement, several in one statement when they come together
 * (PostgreSQL's plain submits: a statement's round trip, executor start and commit flush are
 * paid once per batch, not once per submit). One batch is in flight at a time: a write asked for
 * while none is leads one. It lets the fibers ready to run go first (one yield), so the writes
 * already on their way queue behind it, then writes them all, up to MAX_BATCH, with `writeAll`;
 * writes asked for while a batch is in flight wait for the next, which is how submits that
 * arrive together come to share a statement. Two writes of the same `keyOf` never share a
 * statement (one statement cannot update a row twice): the later is sent alone when the batch
 * is, so one account's submits still wait for each other in the store, not here (a wait for the
 * next batch cost a round trip per submit: one account's submits/s fell to 0.42x). No timer, fiber or scope: the leading caller runs the statement on its own fiber,
 * answers the others, and hands the lead to the first write still waiting.
 *
 * A batch whose statement fails is written again one write to a statement, so a write that fails
 * alone never fails its neighbours (a statement is atomic: the failed one wrote nothing). Each
 * write is uninterruptible until its answer, as a submit's store write is (storeSubmit.ts), so a
 * batch is never left without its leader.
 *
 * A write asked for inside a transaction of the caller's (`enclosing`, the client's transaction
 * service, is in its context) is never batched: it is written alone on the caller's fiber, in
 * that transaction, so it commits or rolls back with the caller's other writes.
 *
 * SQLite's submits use it too, a batch to a transaction (transactionBatches.ts).
 */
export const makeStatementBatches = <I, O, E>(options: {
  readonly writeAll: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>
  /** Writes of one key never share a batch; without it, any may. */
  readonly keyOf?: ((item: I) => string) | undefined
  readonly enclosing: Context.Key<any, unknown>
}): ((item: I) => Effect.Effect<O, E>) => {
  const { enclosing, keyOf, writeAll } = options
  const waiting: Array<Waiting<I, O, E>> = []
  let leading = false

  const alone = (item: I): Effect.Effect<O, E> => Effect.map(writeAll([item]), (answers) => answers[0]!)

  /**
   * The waiting writes that join `first`'s batch, taken out of `waiting`: one per key. A write
   * whose key the batch already holds is sent at once in a statement of its own, on its own fiber
   * (for a submit, it waits in the store for its account's row, as every submit did before
   * batches); writes beyond MAX_BATCH stay for the next batch, in order.
   */
  const joining = (first: I): Array<Waiting<I, O, E>> => {
    if (keyOf === undefined) return waiting.splice(0, MAX_BATCH - 1)
    const keys = new Set([keyOf(first)])
    const taken: Array<Waiting<I, O, E>> = []
    let kept = 0
    for (let i = 0; i < waiting.length; i++) {
      const next = waiting[i]!
      if (taken.length === MAX_BATCH - 1) {
        waiting[kept++] = next
        continue
      }
      const key = keyOf(next.item)
      if (keys.has(key)) {
        next.done(alone(next.item))
      } else {
        keys.add(key)
        taken.push(next)
      }
    }
    waiting.length = kept
    return taken
  }

  const lead = (first: I): Effect.Effect<O, E> =>
    Effect.flatten(Effect.gen(function*() {
      // The submits of requests already read reach this point meanwhile and join the batch.
      yield* Effect.yieldNow
      const others = joining(first)
      const items = others.length === 0 ? [first] : [first, ...others.map((other) => other.item)]
      const batch = yield* Effect.exit(writeAll(items))
      const exits: ReadonlyArray<Exit.Exit<O, E>> = Exit.isSuccess(batch)
        ? batch.value.map(Exit.succeed)
        : items.length === 1
        ? [Exit.failCause(batch.cause)]
        : yield* Effect.forEach(items, (item) => Effect.exit(alone(item)))
      others.forEach(({ done }, i) => done(exits[i + 1]!))
      const next = waiting.shift()
      if (next === undefined) leading = false
      else next.done(lead(next.item))
      return exits[0]!
    }))

  const batched = (item: I): Effect.Effect<O, E> =>
    Effect.uninterruptible(Effect.suspend(() => {
      if (!leading) {
        leading = true
        return lead(item)
      }
      return Effect.callback<O, E>((done) => {
        waiting.push({ item, done })
      })
    }))

  return (item) =>
    Effect.withFiber((fiber) => Context.getOrUndefined(fiber.context, enclosing) === undefined ? batched(item) : alone(item))
}
