import { Effect, Option } from "effect"
import type { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import type { MemoryState } from "./state.js"

export const catalogRepo = (state: MemoryState): CatalogRepo["Service"] => ({
  load: Effect.sync(() => state.catalog),
  revision: Effect.sync(() => state.catalog.revision),
  replace: (document, ifRevision) =>
    Effect.sync(() => {
      if (ifRevision !== undefined && ifRevision !== state.catalog.revision) return Option.none()
      state.catalog = { document, revision: state.catalog.revision + 1 }
      return Option.some(state.catalog)
    })
})
