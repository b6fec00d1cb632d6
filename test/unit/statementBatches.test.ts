import { Context, Deferred, Effect, Exit, Fiber } from "effect"
import { describe, expect, it } from "vitest"
import { makeStatementBatches } from "../../adapters/sql/jobs/statementBatches.js"
import { RequestStoreWait, requestStoreWait } from "../../src/ports/StoreWait.js"

/** Stands for the SQL client's transaction service: never in these writes' context. */
const Enclosing = Context.Service<unknown>("test/Enclosing")

/** Batches whose first statement holds until `release`, recording what each statement wrote. */
const setup = Effect.gen(function*() {
  const written: Array<ReadonlyArray<string>> = []
  const release = yield* Deferred.make<void>()
  const sent = yield* Deferred.make<void>()
  const write = makeStatementBatches<string, string, string>({
    writeAll: (items) =>
      Effect.gen(function*() {
        yield* Deferred.succeed(sent, undefined)
        yield* Deferred.await(release)
        written.push(items)
        return items.map((item) => `${item} written`)
      }),
    enclosing: Enclosing,
    shed: (boundMs) => Effect.fail(`shed after ${boundMs} ms`)
  })
  /** A request's write: its store wait bounded at `boundMs`, as the HTTP layer provides it. */
  const asRequest = (item: string, boundMs: number) => Effect.provideService(write(item), RequestStoreWait, requestStoreWait(boundMs))
  return { asRequest, release, sent, write, written }
})

describe("a batch's queue within the store wait (statementBatches)", () => {
  it("sheds a request's write no batch took within its bound, unwritten; a worker's write and the leader wait", () =>
    Effect.runPromise(Effect.gen(function*() {
      const { asRequest, release, sent, write, written } = yield* setup
      // The leader's statement is on its way and holds: the writes after it queue for the next batch.
      const leader = yield* Effect.forkChild(asRequest("a", 30))
      yield* Deferred.await(sent)
      const worker = yield* Effect.forkChild(write("w"))
      const shed = yield* Effect.all([asRequest("b", 30), asRequest("c", 30)].map(Effect.exit), { concurrency: "unbounded" })
      expect(shed).toEqual([Exit.fail("shed after 30 ms"), Exit.fail("shed after 30 ms")])

      yield* Deferred.succeed(release, undefined)
      expect(yield* Fiber.join(leader)).toBe("a written")
      expect(yield* Fiber.join(worker)).toBe("w written")
      // b and c left the queue before any batch: nothing of them was written.
      expect(written).toEqual([["a"], ["w"]])
    })))

  it("writes a request's queued write that a batch takes within its bound", () =>
    Effect.runPromise(Effect.gen(function*() {
      const { asRequest, release, sent, written } = yield* setup
      const leader = yield* Effect.forkChild(asRequest("a", 60_000))
      yield* Deferred.await(sent)
      const queued = yield* Effect.forkChild(asRequest("b", 60_000))
      yield* Deferred.succeed(release, undefined)
      expect(yield* Fiber.join(leader)).toBe("a written")
      expect(yield* Fiber.join(queued)).toBe("b written")
      expect(written).toEqual([["a"], ["b"]])
    })))
})
