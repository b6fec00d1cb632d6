import { type Context, Effect } from "effect"
import { makeStatementBatches } from "./statementBatches.js"

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
 * The leading, the yield, the retry one by one and the enclosing rule are statementBatches.ts's,
 * a batch being one transaction of its writes in turn.
 */
export const makeTransactionBatches = <I, O, E>(
  transaction: <A>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>,
  write: (item: I) => Effect.Effect<O, E>,
  enclosing: Context.Key<any, unknown>
): ((item: I) => Effect.Effect<O, E>) =>
  makeStatementBatches({ writeAll: (items: ReadonlyArray<I>) => transaction(Effect.forEach(items, write)), enclosing })
