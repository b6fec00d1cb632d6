import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { catalogRepo } from "../../adapters/memory/MemoryCatalog.js"
import { makeMemoryState } from "../../adapters/memory/state.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { Catalog } from "../../src/services/Catalog.js"
import { account, sampleCatalog } from "../conformance/fixtures.js"

describe("the catalog cache", () => {
  it.effect("a load that started before a replace and ends after it never puts the older catalog back", () =>
    Effect.gen(function*() {
      const state = yield* makeMemoryState
      const repo = catalogRepo(state)
      const loading = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // The first load reads the store, then is held before it answers, as a slow database read is.
      let first = true
      const slowRepo: CatalogRepo["Type"] = {
        ...repo,
        load: Effect.flatMap(repo.load, (stored) =>
          first
            ? Effect.sync(() => (first = false)).pipe(
              Effect.zipRight(Deferred.succeed(loading, undefined)),
              Effect.zipRight(Deferred.await(release)),
              Effect.as(stored)
            )
            : Effect.succeed(stored))
      }
      const catalog = yield* Catalog.pipe(Effect.provide(Catalog.layer.pipe(Layer.provide(Layer.succeed(CatalogRepo, slowRepo)))))
      const document = sampleCatalog()
      const slug = document.models[0]!.slug

      // A worker reads the (still empty) catalog; an operator's replace lands while that read is on its way.
      const reader = yield* Effect.fork(catalog.snapshot)
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
})
