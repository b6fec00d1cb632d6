import { Effect } from "effect"
import type { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import type { MemoryState } from "./state.js"

export const catalogRepo = (state: MemoryState): CatalogRepo["Type"] => ({
  load: Effect.sync(() => state.catalog),
  revision: Effect.sync(() => state.catalog.revision),
  replace: (document) =>
    Effect.sync(() => {
      state.catalog = { document, revision: state.catalog.revision + 1 }
      return state.catalog
    })
})
