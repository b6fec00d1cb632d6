import { Context, type Effect } from "effect"
import type { CatalogDocument } from "../domain/catalog.js"
import type { StoreError } from "../domain/errors.js"

export interface StoredCatalog {
  readonly document: CatalogDocument
  /** Grows by one with every replace; lets processes notice another's change cheaply. */
  readonly revision: number
}

export class CatalogRepo extends Context.Tag("genjobs/CatalogRepo")<CatalogRepo, {
  readonly load: Effect.Effect<StoredCatalog, StoreError>
  readonly revision: Effect.Effect<number, StoreError>
  readonly replace: (document: CatalogDocument) => Effect.Effect<StoredCatalog, StoreError>
}>() {}
