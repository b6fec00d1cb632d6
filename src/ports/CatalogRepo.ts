import { Context, type Effect, type Option } from "effect"
import type { CatalogDocument } from "../domain/catalog.js"
import type { StoreError } from "../domain/errors.js"

export interface StoredCatalog {
  readonly document: CatalogDocument
  /** Grows by one with every replace; lets processes notice another's change cheaply. */
  readonly revision: number
}

export class CatalogRepo extends Context.Service<CatalogRepo, {
  readonly load: Effect.Effect<StoredCatalog, StoreError>
  readonly revision: Effect.Effect<number, StoreError>
  /**
   * Stores `document` as the next revision. With `ifRevision`, only while the stored revision is
   * that one (0: nothing stored yet), checked and written at once; none when it is not, and
   * nothing changed.
   */
  readonly replace: (document: CatalogDocument, ifRevision?: number) => Effect.Effect<Option.Option<StoredCatalog>, StoreError>
}>()("genjobs/CatalogRepo") {}
