import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { StoreError } from "../../src/domain/errors.js"
import { catalogRepo } from "../../adapters/memory/MemoryCatalog.js"
import { makeMemoryState } from "../../adapters/memory/state.js"
import { DEMO_PROVIDER_ID, makeDemoProvider } from "../../adapters/generators/demo/DemoGenerator.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { layerProviders } from "../../src/ports/Provider.js"
import { Catalog } from "../../src/services/Catalog.js"
import { account, sampleCatalog } from "../conformance/fixtures.js"

/** The catalog over a repository, with the demo provider the sample catalog names registered. */
const catalogOver = (repo: CatalogRepo["Service"]) =>
  Catalog.layer.pipe(Layer.provide(Layer.succeed(CatalogRepo, repo)), Layer.provide(layerProviders({ [DEMO_PROVIDER_ID]: makeDemoProvider() })))

describe("the catalog cache", () => {
  it.effect("a load that started before a replace and ends after it never puts the older catalog back", () =>
    Effect.gen(function*() {
      const state = yield* makeMemoryState
      const repo = catalogRepo(state)
      const loading = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // The first load reads the store, then is held before it answers, as a slow database read is.
      let first = true
      const slowRepo: CatalogRepo["Service"] = {
        ...repo,
        load: Effect.flatMap(repo.load, (stored) =>
          first
            ? Effect.sync(() => (first = false)).pipe(
              Effect.andThen(Deferred.succeed(loading, undefined)),
              Effect.andThen(Deferred.await(release)),
              Effect.as(stored)
            )
            : Effect.succeed(stored))
      }
      // Built in the test\'s scope, as the engine builds it in its own: the shared reloads run there.
      const catalog = Context.get(yield* Layer.build(catalogOver(slowRepo)), Catalog)
      const document = sampleCatalog()
      const slug = document.models[0]!.slug

      // A worker reads the (still empty) catalog; an operator's replace lands while that read is on its way.
      const reader = yield* Effect.forkChild(catalog.snapshot)
      yield* Deferred.await(loading)
      yield* catalog.replace(document)
      yield* Deferred.succeed(release, undefined)
      // The slow read answers with the newest catalog it knows of, not the one it read.
      expect((yield* Fiber.join(reader)).revision).toBe(1)

      // A submit right after the replace finds the model.
      const resolved = yield* Effect.exit(catalog.resolve(account(), slug, undefined))
      expect(Exit.isSuccess(resolved)).toBe(true)
      expect((yield* catalog.snapshot).revision).toBe(1)
    }))

  it.effect("callers that find the cache stale together share one revision check, and its failure", () =>
    Effect.gen(function*() {
      const state = yield* makeMemoryState
      const repo = catalogRepo(state)
      let checks = 0
      let gate = yield* Deferred.make<void>()
      let failing = false
      const countingRepo: CatalogRepo["Service"] = {
        ...repo,
        revision: Effect.suspend(() => {
          checks++
          return Effect.andThen(
            Deferred.await(gate),
            failing ? Effect.fail(new StoreError({ message: "read catalog revision: connection lost" })) : repo.revision
          )
        })
      }
      // Built in the test\'s scope, as the engine builds it in its own: the shared reloads run there.
      const catalog = Context.get(yield* Layer.build(catalogOver(countingRepo)), Catalog)
      yield* catalog.replace(sampleCatalog())

      // Past the check interval, 50 readers at once (a worker claiming a batch) and one that gives up.
      yield* TestClock.adjust("3 seconds")
      const readers = yield* Effect.forEach(Array.from({ length: 50 }, () => catalog.snapshot), (read) => Effect.forkChild(read))
      const impatient = yield* Effect.forkChild(catalog.snapshot)
      yield* Effect.yieldNow
      yield* Fiber.interrupt(impatient)
      yield* Deferred.succeed(gate, undefined)
      const read = yield* Fiber.joinAll(readers)
      expect(checks).toBe(1)
      expect(read.every((stored) => stored.revision === 1)).toBe(true)

      // A check that fails fails the callers waiting on it; the next stale caller checks again.
      yield* TestClock.adjust("3 seconds")
      gate = yield* Deferred.make<void>()
      failing = true
      const failed = yield* Effect.forEach(Array.from({ length: 10 }, () => Effect.exit(catalog.snapshot)), (read) => Effect.forkChild(read))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      const exits = yield* Fiber.joinAll(failed)
      expect(checks).toBe(2)
      // Each exit's cause is that one failure, as Cause's "Fail" was before Effect 4 flattened causes.
      const onlyFailure = (exit: Exit.Exit<unknown, { readonly _tag: string }>) => {
        const [reason, ...more] = Exit.isFailure(exit) ? exit.cause.reasons : []
        return reason !== undefined && more.length === 0 && Cause.isFailReason(reason) && reason.error._tag
      }
      expect(exits.map(onlyFailure)).toEqual(
        Array.from({ length: 10 }, () => "StoreError")
      )
      failing = false
      expect((yield* catalog.snapshot).revision).toBe(1)
      expect(checks).toBe(3)
    }))
})
