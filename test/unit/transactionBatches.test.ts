import { Context, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeTransactionBatches } from "../../adapters/sql/jobs/transactionBatches.js"

/** In a caller's context while it runs inside a transaction of its own (the SQL client's transaction service). */
const Enclosing = Context.Service<{ readonly name: string }>("test/Enclosing")

/** A store whose transactions record the writes each one held, committed or not, and the enclosing transaction they ran in. */
const makeStore = (bad: ReadonlySet<number> = new Set()) => {
  const transactions: Array<{ writes: Array<number>; committed: boolean; within?: string }> = []
  let open: { writes: Array<number>; committed: boolean; within?: string } | undefined
  const transaction = <A>(effect: Effect.Effect<A, string>) =>
    Effect.withFiber<A, string>((fiber) => {
      const within = Context.getOrUndefined(fiber.context, Enclosing)?.name
      open = { writes: [], committed: false, ...(within === undefined ? {} : { within }) }
      transactions.push(open)
      const current = open
      return Effect.tap(effect, () => Effect.sync(() => (current.committed = true)))
    })
  const write = (n: number) =>
    Effect.suspend(() => {
      open!.writes.push(n)
      return bad.has(n) ? Effect.fail(`bad ${n}`) : Effect.succeed(n * 10)
    })
  return { transactions, batched: makeTransactionBatches(transaction, write, Enclosing) }
}

describe("transactions shared by the writes that come together", () => {
  it("writes asked for at once go in one transaction, each answered its own output", async () => {
    const { batched, transactions } = makeStore()
    const answers = await Effect.runPromise(Effect.all([1, 2, 3, 4, 5].map(batched), { concurrency: "unbounded" }))
    expect(answers).toStrictEqual([10, 20, 30, 40, 50])
    expect(transactions).toStrictEqual([{ writes: [1, 2, 3, 4, 5], committed: true }])
  })

  it("a lone write has a transaction of its own, and so has each one after another", async () => {
    const { batched, transactions } = makeStore()
    for (const n of [1, 2, 3]) expect(await Effect.runPromise(batched(n))).toBe(n * 10)
    expect(transactions.map((t) => t.writes)).toStrictEqual([[1], [2], [3]])
  })

  it("a batch that fails is written again one write to a transaction: the bad write fails alone", async () => {
    const { batched, transactions } = makeStore(new Set([2]))
    const answers = await Effect.runPromise(Effect.all([1, 2, 3].map((n) => Effect.result(batched(n))), { concurrency: "unbounded" }))
    expect(answers.map((r) => r._tag === "Success" ? r.success : r.failure)).toStrictEqual([10, "bad 2", 30])
    expect(transactions).toStrictEqual([
      { writes: [1, 2], committed: false },
      { writes: [1], committed: true },
      { writes: [2], committed: false },
      { writes: [3], committed: true }
    ])
  })

  it("writes asked for while another leads are all answered, and the lead passes on", async () => {
    const { batched, transactions } = makeStore()
    const first = await Effect.runPromise(Effect.all([
      batched(1),
      // Asked for once the first write leads: each is written once, in a batch or the next.
      Effect.andThen(Effect.yieldNow, Effect.all([batched(2), batched(3)], { concurrency: "unbounded" }))
    ], { concurrency: "unbounded" }))
    expect(first).toStrictEqual([10, [20, 30]])
    expect(transactions.flatMap((t) => t.writes).sort()).toStrictEqual([1, 2, 3])
    expect(transactions.every((t) => t.committed)).toBe(true)
    // Nothing is left leading: a later write still gets its answer.
    expect(await Effect.runPromise(batched(4))).toBe(40)
  })

  it("a write asked for inside the caller's own transaction is written there, alone, never with others", async () => {
    const { batched, transactions } = makeStore()
    const answers = await Effect.runPromise(Effect.all([
      batched(1),
      batched(2).pipe(Effect.provideService(Enclosing, { name: "the caller's" })),
      batched(3)
    ], { concurrency: "unbounded" }))
    expect(answers).toStrictEqual([10, 20, 30])
    // Written at once, nested in the caller's transaction; the others share one of their own.
    expect(transactions).toStrictEqual([
      { writes: [2], committed: true, within: "the caller's" },
      { writes: [1, 3], committed: true }
    ])
  })

  it("a write inside the caller's transaction while a batch leads does not join it", async () => {
    const { batched, transactions } = makeStore()
    await Effect.runPromise(Effect.all([
      batched(1),
      Effect.andThen(Effect.yieldNow, batched(2).pipe(Effect.provideService(Enclosing, { name: "the caller's" }))),
      Effect.andThen(Effect.yieldNow, batched(3))
    ], { concurrency: "unbounded" }))
    expect(transactions.find((t) => t.writes.includes(2))).toStrictEqual({ writes: [2], committed: true, within: "the caller's" })
    expect(transactions.filter((t) => t.within === undefined).flatMap((t) => t.writes).sort()).toStrictEqual([1, 3])
  })
})
