import { Effect } from "effect"
import { type AuditActor, SYSTEM_ACTOR } from "../../domain/audit.js"
import { type CatalogDiff, catalogDiff, isEmptyDiff } from "../../domain/catalogDiff.js"
import type { PreconditionFailed } from "../../domain/catalog.js"
import type { StoreError, ValidationError } from "../../domain/errors.js"
import type { StoredCatalog } from "../../ports/CatalogRepo.js"
import { audited } from "./audited.js"
import type { AdminDeps } from "./deps.js"

/** What replacing the catalog with a document would change, against the revision it was compared with. */
export interface CatalogPreview {
  readonly revision: number
  readonly unchanged: boolean
  readonly diff: CatalogDiff
}

/** Checks and stores a whole catalog document, if still at `ifRevision` when given (see Catalog.replace). */
export const replaceCatalog = (deps: Pick<AdminDeps, "audit" | "catalog">) =>
(
  input: unknown,
  by: AuditActor = SYSTEM_ACTOR,
  ifRevision?: number
): Effect.Effect<StoredCatalog, ValidationError | PreconditionFailed | StoreError> =>
  audited(deps, by, "catalog.replace", deps.catalog.replace(input, ifRevision), (stored) => ({
    target: "catalog",
    summary: {
      revision: stored.revision,
      models: stored.document.models.length,
      providers: stored.document.providers.length
    }
  }))

/**
 * The check `replaceCatalog` makes, and what the document would add, remove and change, by id;
 * nothing is stored. A dry run before a replace, as `genjobs catalog apply` shows.
 */
export const previewCatalog = ({ catalog }: Pick<AdminDeps, "catalog">) => (input: unknown): Effect.Effect<CatalogPreview, ValidationError | StoreError> =>
  Effect.gen(function*() {
    const next = yield* catalog.check(input)
    const { document, revision } = yield* catalog.snapshot
    const diff = catalogDiff(document, next)
    return { revision, unchanged: isEmptyDiff(diff), diff }
  })
