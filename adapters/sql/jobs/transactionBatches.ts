import { Context, Effect, Exit } from "effect"

/** Transactions of one writer's submits together at most. */
const MAX_BATCH = 64

interface Waiting<I, O, E> {
  readonly item: I
  /** Resumes the waiting caller: with its answer, or with the next batch to lead. */
  readonly done: (answer: Effect.Effect<O, E>) => void
}

/**
 * Writes that each need a transaction, several to one transaction when they come together. A
 * write asked for while none runs leads a batch: it lets the fibers ready to run go first (one
 * yield), so the writes already on their way queue behind it, then writes them all in one
 * transaction, up to MAX_BATCH, each write seeing the ones before it as if they had committed
 * alone. Writes asked for while a batch runs wait for the next. No timer, fiber or scope: the
 * leading caller runs the transaction on its own fiber, answers the others, and hands the lead
 * to the first write still waiting. A batch that fails is written
 * again one write to a transaction, so one bad write fails alone and never its neighbours.
 *
 * For a store with one writer (SQLite): there, writes queue for the write lock anyway, and a
 * transaction's BEGIN and COMMIT, the WAL frames of pages every submit touches (the account,
 * the rollup, the indexes' leaves) and the lock's hand-over are paid once per batch. Each write
 * is uninterruptible until its answer, as a submit's store write is (storeSubmit.ts), so a
 * batch is never left without its leader. Without the yield, SQLite's synchronous statements
 * ran each submit's transaction before the next request reached its own: every batch was one.
 *
 * A write asked for inside a transaction of the caller's (`enclosing`, the client's transaction
 * service, is in its context) is never batched: it is written on the caller's own fiber, nested
 * in that transaction, so it commits or rolls back with the caller's other writes. Batched, it
 * would have been written in another caller's transaction (and answered before its own
 * committed), or, leading, would have pulled the others' writes into its caller's transaction.
 */
export const makeTransactionBatches = <I, O, E>(
  transaction: <A>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>,
  write: (item: I) => Effect.Effect<O, E>,
  enclosing: Context.Key<any, unknown>
): ((item: I) => Effect.Effect<O, E>) => {
  const waiting: Array<Waiting<I, O, E>> = []
  let leading = false

  const alone = (item: I) => Effect.exit(transaction(write(item)))

  const lead = (first: I): Effect.Effect<O, E> =>
    Effect.flatten(Effect.gen(function*() {
      // The submits of requests already read reach this point meanwhile and join the batch.
      yield* Effect.yieldNow
      const others = waiting.splice(0, MAX_BATCH - 1)
      const items = [first, ...others.map((other) => other.item)]
      const batch = yield* Effect.exit(transaction(Effect.forEach(items, write)))
      const exits: ReadonlyArray<Exit.Exit<O, E>> = Exit.isSuccess(batch)
        ? batch.value.map(Exit.succeed)
        : items.length === 1
        ? [Exit.failCause(batch.cause)]
        : yield* Effect.forEach(items, alone)
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
    Effect.withFiber((fiber) =>
      Context.getOrUndefined(fiber.context, enclosing) === undefined ? batched(item) : transaction(write(item))
    )
}
