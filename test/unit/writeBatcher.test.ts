import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Queue, Scope } from "effect"
import { makeBackgroundWriter, makeWriteBatcher } from "../../src/services/writeBatcher.js"

/** A store whose writes wait for `open` and record each batch they are given. */
const gatedStore = Effect.gen(function*() {
  const open = yield* Deferred.make<void>()
  const batches: Array<ReadonlyArray<string>> = []
  const writeMany = (items: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      batches.push(items)
      yield* Deferred.await(open)
      if (items.includes("bad")) return yield* Effect.fail(`refused ${items.join(",")}`)
      return items.map((item) => item.toUpperCase())
    })
  return { open, batches, writeMany }
})

/** Lets other fibers run until `done` holds (the writer runs in a fiber of its own). */
const until = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 1_000 && !done(); i++) yield* Effect.yieldNow
    expect(done()).toBe(true)
  })

describe("write batcher", () => {
  it.effect("writes the first at once, and what arrives meanwhile in the next write, each answered its own", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      const write = yield* makeWriteBatcher(writeMany)
      const first = yield* Effect.forkChild(write("a"))
      yield* until(() => batches.length === 1)
      const later = yield* Effect.forkChild(Effect.all(["b", "c", "d"].map(write), { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(open, undefined)
      expect(yield* Fiber.join(first)).toBe("A")
      expect(yield* Fiber.join(later)).toEqual(["B", "C", "D"])
      expect(batches).toEqual([["a"], ["b", "c", "d"]])
    }))

  it.effect.each([false, true])("the writes of fibers one offer wakes go in one batch when it gathers its turn (gatherTurn: %s)", (gatherTurn) =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      yield* Deferred.succeed(open, undefined)
      const write = yield* makeWriteBatcher(writeMany, { gatherTurn })
      // Sixteen fibers waiting on a queue, as a webhook dispatcher's runners wait for a claim's
      // deliveries: one offer wakes them all, and each writes as soon as it runs.
      const ready = yield* Queue.unbounded<string>()
      const takers = yield* Effect.forkChild(Effect.all(
        Array.from({ length: 16 }, () => Effect.flatMap(Queue.take(ready), write)),
        { concurrency: "unbounded" }
      ))
      yield* Effect.yieldNow
      yield* Queue.offerAll(ready, Array.from({ length: 16 }, (_, i) => `w${i}`))
      yield* Fiber.join(takers)
      // At once, the first runner's write went before the others had run: a batch of its own.
      expect(batches.map((batch) => batch.length)).toEqual(gatherTurn ? [16] : [1, 15])
    }))

  it.effect("a caller resumed by its answer finds its write no longer pending", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      const write = yield* makeWriteBatcher(writeMany)
      // A riding claim (jobRepo/endings.ts) asks `pending` from the fiber an answer resumes,
      // which runs on the writer's stack: a write still counted there would keep the claim
      // waiting for a batch that has already gone.
      const seen: Array<boolean> = []
      const callers = yield* Effect.forkChild(Effect.all(["a", "b"].map((item) =>
        Effect.tap(write(item), () => Effect.sync(() => seen.push(write.pending((pending) => pending === item))))), { concurrency: "unbounded" }))
      yield* until(() => batches.length === 1)
      expect(write.pending((item) => item === "b")).toBe(true)
      yield* Deferred.succeed(open, undefined)
      yield* Fiber.join(callers)
      expect(seen).toEqual([false, false])
    }))

  it.effect("a write `hold` waits for the writes about to come, and goes with them as one batch", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      // Two writes of one claim expected: the first waits (an hour at most) until the second is queued.
      let asked = 0
      const write = yield* makeWriteBatcher(writeMany, { hold: () => (asked < 2 ? 3_600_000 : 0) })
      asked++
      const first = yield* Effect.forkChild(write("a"))
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      expect(batches).toEqual([])
      asked++
      const second = yield* Effect.forkChild(write("b"))
      yield* until(() => batches.length === 1)
      yield* Deferred.succeed(open, undefined)
      expect([yield* Fiber.join(first), yield* Fiber.join(second)]).toEqual(["A", "B"])
      expect(batches).toEqual([["a", "b"]])
    }))

  it.live("a held write goes once its hold's time passes, whatever else comes", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      yield* Deferred.succeed(open, undefined)
      // Always more to come, never coming: the hold's 5 ms alone sends the write.
      const write = yield* makeWriteBatcher(writeMany, { hold: () => 5 })
      expect(yield* write("a")).toBe("A")
      expect(batches).toEqual([["a"]])
    }))

  it.effect("keeps batches to the largest size", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      const write = yield* makeWriteBatcher(writeMany, { maxBatch: 2 })
      const all = yield* Effect.forkChild(Effect.all(["a", "b", "c", "d", "e"].map(write), { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(open, undefined)
      expect(yield* Fiber.join(all)).toEqual(["A", "B", "C", "D", "E"])
      expect(batches.flat()).toEqual(["a", "b", "c", "d", "e"])
      expect(Math.max(...batches.map((b) => b.length))).toBe(2)
    }))

  it.effect("a failed batch is written again item by item: only the bad item fails", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      const write = yield* makeWriteBatcher(writeMany)
      const first = yield* Effect.forkChild(write("a"))
      yield* until(() => batches.length === 1)
      const rest = yield* Effect.forkChild(Effect.all(["b", "bad", "c"].map((item) => Effect.result(write(item))), { concurrency: "unbounded" }))
      yield* Effect.yieldNow
      yield* Deferred.succeed(open, undefined)
      yield* Fiber.join(first)
      const answers = yield* Fiber.join(rest)
      expect(answers.map((a) => (a._tag === "Success" ? a.success : a.failure))).toEqual(["B", "refused bad", "C"])
      expect(batches).toEqual([["a"], ["b", "bad", "c"], ["b"], ["bad"], ["c"]])
    }))

  it.effect("an interrupted caller stops neither its write nor the others'", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      const write = yield* makeWriteBatcher(writeMany)
      const first = yield* Effect.forkChild(write("a"))
      yield* until(() => batches.length === 1)
      const gone = yield* Effect.forkChild(write("b"))
      const kept = yield* Effect.forkChild(write("c"))
      yield* Effect.yieldNow
      yield* Fiber.interrupt(first)
      yield* Fiber.interrupt(gone)
      yield* Deferred.succeed(open, undefined)
      expect(yield* Fiber.join(kept)).toBe("C")
      expect(batches).toEqual([["a"], ["b", "c"]])
      // And the batcher still writes afterwards.
      expect(yield* write("d")).toBe("D")
    }))

  it.effect("closing its scope stops the writer: a write on its way or queued ends interrupted, never waits, and none starts after", () =>
    Effect.gen(function*() {
      const { batches, writeMany } = yield* gatedStore
      const writers: Array<Fiber.Fiber<unknown, unknown>> = []
      const recorded = (items: ReadonlyArray<string>) =>
        Effect.withFiber<ReadonlyArray<string>, string>((fiber) => {
          writers.push(fiber)
          return writeMany(items)
        })
      const scope = yield* Scope.make()
      const write = yield* Scope.provide(makeWriteBatcher(recorded), scope)
      const onItsWay = yield* Effect.forkChild(Effect.exit(write("a")))
      yield* until(() => batches.length === 1)
      const queued = yield* Effect.forkChild(Effect.exit(write("b")))
      yield* Effect.yieldNow
      // The store never answers: only the close can end these writes.
      yield* Scope.close(scope, Exit.void)
      expect(Exit.hasInterrupts(yield* Fiber.join(onItsWay))).toBe(true)
      expect(Exit.hasInterrupts(yield* Fiber.join(queued))).toBe(true)
      expect(Exit.hasInterrupts(yield* Effect.exit(write("c")))).toBe(true)
      expect(batches).toEqual([["a"]])
      // The writer fiber ended with the scope.
      expect(writers).toHaveLength(1)
      expect(writers[0]!.pollUnsafe()).not.toBeUndefined()
    }))

  it.effect("closing its scope leaves the answers already given as they are", () =>
    Effect.gen(function*() {
      const { open, writeMany } = yield* gatedStore
      yield* Deferred.succeed(open, undefined)
      const scope = yield* Scope.make()
      const write = yield* Scope.provide(makeWriteBatcher(writeMany), scope)
      expect(yield* write("a")).toBe("A")
      yield* Scope.close(scope, Exit.void)
      expect(Exit.hasInterrupts(yield* Effect.exit(write("b")))).toBe(true)
    }))
})

describe("background writer", () => {
  it.effect("writes the first at once and what is handed over meanwhile together, the caller not waiting", () =>
    Effect.gen(function*() {
      const { batches, open, writeMany } = yield* gatedStore
      const scope = yield* Scope.make()
      const send = yield* makeBackgroundWriter((items: ReadonlyArray<string>) => Effect.asVoid(Effect.orDie(writeMany(items))), 2).pipe(
        Scope.provide(scope)
      )
      send("a")
      yield* until(() => batches.length === 1)
      send("b")
      send("c")
      send("d")
      expect(batches).toEqual([["a"]])
      yield* Deferred.succeed(open, undefined)
      yield* until(() => batches.length === 3)
      expect(batches).toEqual([["a"], ["b", "c"], ["d"]])
      yield* Scope.close(scope, Exit.void)
    }))
})
