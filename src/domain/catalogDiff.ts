import type { CatalogDocument } from "./catalog.js"

export interface PartDiff {
  readonly added: ReadonlyArray<string>
  readonly removed: ReadonlyArray<string>
  readonly changed: ReadonlyArray<string>
}

export interface CatalogDiff {
  readonly categories: PartDiff
  readonly capabilities: PartDiff
  readonly providers: PartDiff
  readonly models: PartDiff
}

const diffBy = <A>(before: ReadonlyArray<A>, after: ReadonlyArray<A>, idOf: (a: A) => string): PartDiff => {
  const old = new Map(before.map((a) => [idOf(a), JSON.stringify(a)]))
  const next = new Map(after.map((a) => [idOf(a), JSON.stringify(a)]))
  return {
    added: [...next.keys()].filter((id) => !old.has(id)).sort(),
    removed: [...old.keys()].filter((id) => !next.has(id)).sort(),
    changed: [...next.keys()].filter((id) => old.has(id) && old.get(id) !== next.get(id)).sort()
  }
}

/** What replacing `before` with `after` adds, removes and changes, by id (models by slug). */
export const catalogDiff = (before: CatalogDocument, after: CatalogDocument): CatalogDiff => ({
  categories: diffBy(before.categories, after.categories, (c) => c.id),
  capabilities: diffBy(before.capabilities, after.capabilities, (c) => c.id),
  providers: diffBy(before.providers, after.providers, (p) => p.id),
  models: diffBy(before.models, after.models, (m) => m.slug)
})

export const isEmptyDiff = (diff: CatalogDiff): boolean =>
  Object.values(diff).every((part: PartDiff) => part.added.length + part.removed.length + part.changed.length === 0)
