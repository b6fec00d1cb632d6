import { Context, Effect, Exit, type Fiber } from "effect"
import { RequestStoreWait } from "../../../src/ports/StoreWait.js"

/** Writes of one batch at most. */
const MAX_BATCH = 64

interface Waiting<I, O, E> {
  readonly item: I
  /** Resumes the waiting caller: with its answer, or with the next batch to lead. */
  readonly done: (answer: Effect.Effect<O, E>) => void
  /** The store wait of the request that asked for it, when it may still be shed. */
  readonly wait: RequestStoreWait | undefined
  /** When it was queued (performance.now()). */
  readonly since: number
  /** Sheds it at the end of its request's bound, unless a batch took it first. */
  readonly timer: ReturnType<typeof setTimeout> | undefined
}

/**
 * Writes that each are one statement, several in one statement when they come together
 * (PostgreSQL's plain submits: a statement's round trip, executor start and commit flush are
 * paid once per batch, not once per submit). One batch is in flight at a time: a write asked for
 * while none is leads one. It lets the fibers ready to run go first (one yield), so the writes
 * already on their way queue behind it, then writes them all, up to MAX_BATCH, with `writeAll`;
 * writes asked for while a batch is in flight wait for the next, which is how submits that
 * arrive together come to share a statement (one account's too: `writeAll` decides them as if
 * alone, in the order given). No fiber or scope: the leading caller runs the statement
 * on its own fiber, answers the others, and hands the lead to the first write still waiting.
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
 * With `shed`, the wait here counts against the store wait of the request that asked for the
 * write (`RequestStoreWait`, as a pool's queue counts it, pgShedding.ts): a write no batch took
 * within its request's bound leaves the queue and fails with `shed` (nothing of it was written),
 * and a write that comes to lead a batch has what is left of its bound for its own wait for a
 * connection. Without it, a burst of one account's submits (each in the batches) waited here
 * for as long as the batches before took, past any bound. One timer per queued write that may be
 * shed (a request's), as the pool's queue keeps; none for a worker's write or a batch's leader.
 *
 * SQLite's submits use it too, a batch to a transaction (transactionBatches.ts), without `shed`.
 */
export const makeStatementBatches = <I, O, E>(options: {
  readonly writeAll: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>
  readonly enclosing: Context.Key<any, unknown>
  /** The failure of a write shed after waiting `boundMs` for a batch; without it, writes wait for as long as it takes. */
  readonly shed?: ((boundMs: number) => Effect.Effect<never, E>) | undefined
}): ((item: I) => Effect.Effect<O, E>) => {
  const { enclosing, shed, writeAll } = options
  const waiting: Array<Waiting<I, O, E>> = []
  let leading = false

  const alone = (item: I): Effect.Effect<O, E> => Effect.map(writeAll([item]), (answers) => answers[0]!)

  const lead = (first: I): Effect.Effect<O, E> =>
    Effect.flatten(Effect.gen(function*() {
      // The submits of requests already read reach this point meanwhile and join the batch.
      yield* Effect.yieldNow
      const others = waiting.splice(0, MAX_BATCH - 1)
      for (const other of others) clearTimeout(other.timer)
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
      else next.done(leadNext(next))
      return exits[0]!
    }))

  /** The first write still waiting leads the next batch, with what is left of its request's bound for its connection. */
  const leadNext = (next: Waiting<I, O, E>): Effect.Effect<O, E> => {
    clearTimeout(next.timer)
    if (next.timer !== undefined && next.wait !== undefined) {
      next.wait.boundMs = Math.max(1, Math.round(next.wait.boundMs - (performance.now() - next.since)))
    }
    return lead(next.item)
  }

  /** Queues a write for the next batch; a request's is shed at the end of its bound if no batch took it. */
  const queue = (fiber: Fiber.Fiber<unknown, unknown>, item: I) =>
    Effect.callback<O, E>((done) => {
      const wait = shed === undefined ? undefined : fiber.getRef(RequestStoreWait)
      const sheddable = wait !== undefined && !wait.underWay
      const entry: Waiting<I, O, E> = {
        item,
        done,
        wait,
        since: performance.now(),
        timer: sheddable
          ? setTimeout(() => {
            const at = waiting.indexOf(entry)
            if (at < 0) return
            waiting.splice(at, 1)
            done(shed!(wait.boundMs))
          }, wait.boundMs)
          : undefined
      }
      waiting.push(entry)
    })

  const batched = (fiber: Fiber.Fiber<unknown, unknown>, item: I): Effect.Effect<O, E> =>
    Effect.uninterruptible(Effect.suspend(() => {
      if (!leading) {
        leading = true
        return lead(item)
      }
      return queue(fiber, item)
    }))

  return (item) =>
    Effect.withFiber((fiber) => Context.getOrUndefined(fiber.context, enclosing) === undefined ? batched(fiber, item) : alone(item))
}
