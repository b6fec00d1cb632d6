import type { ValidateFunction } from "ajv"
import { Clock, Context, Deferred, Effect, Either, Layer, Option, Ref } from "effect"
import type { Account } from "../domain/account.js"
import type { CatalogDocument, CatalogModel, ModelVersion } from "../domain/catalog.js"
import { checkCatalogDocument } from "../domain/catalogCheck.js"
import { canSee, defaultVersion, findModel, isUsable } from "../domain/catalogRules.js"
import { engineError, type EngineError, type StoreError } from "../domain/errors.js"
import { compileSchema, problemsOf } from "../domain/jsonSchema.js"
import { CatalogRepo, type StoredCatalog } from "../ports/CatalogRepo.js"

export interface ResolvedModel {
  readonly model: CatalogModel
  readonly version: ModelVersion
}

interface Compiled {
  readonly stored: StoredCatalog
  readonly checkedAt: number
  readonly validators: Map<string, ValidateFunction>
}

/** Another process's catalog change shows here within this long. */
const REVISION_CHECK_MS = 2_000

export const make = Effect.gen(function*() {
  const repo = yield* CatalogRepo
  const cache = yield* Ref.make<Compiled | undefined>(undefined)
  /** Owns the shared reloads: the engine's shutdown interrupts one in flight. */
  const scope = yield* Effect.scope

  const compile = (stored: StoredCatalog, now: number): Compiled => ({ stored, checkedAt: now, validators: new Map() })

  /**
   * Caches `next` unless a newer revision got there meanwhile: a read that began before a
   * replace and answers after it must not put the older catalog back for the next check's while.
   */
  const keep = (next: Compiled) =>
    Ref.modify(cache, (cached) => {
      const kept = cached !== undefined && cached.stored.revision > next.stored.revision ? cached : next
      return [kept, kept] as const
    })

  /** The stored revision compared with the cache's, and the catalog read again if it moved. */
  const reload = (now: number): Effect.Effect<Compiled, StoreError> =>
    Effect.gen(function*() {
      const cached = yield* Ref.get(cache)
      if (cached !== undefined && (yield* repo.revision) === cached.stored.revision) return yield* keep({ ...cached, checkedAt: now })
      return yield* keep(compile(yield* repo.load, now))
    })

  /**
   * The reload in flight, shared: every caller that finds the cache stale while one runs waits
   * for it rather than sending its own. A worker claiming thousands of jobs at once otherwise
   * sent thousands of revision checks, each holding a pool connection.
   */
  const reloading = yield* Ref.make<Deferred.Deferred<Compiled, StoreError> | undefined>(undefined)

  const sharedReload = (now: number): Effect.Effect<Compiled, StoreError> =>
    Effect.gen(function*() {
      const mine = yield* Deferred.make<Compiled, StoreError>()
      const joined = yield* Ref.modify(reloading, (inFlight) => (inFlight === undefined ? [mine, mine] : [inFlight, inFlight]))
      if (joined === mine) {
        // Its own fiber: a caller that gives up waiting (interrupted) does not cancel the others' answer.
        yield* Effect.forkIn(
          reload(now).pipe(Effect.exit, Effect.flatMap((exit) => Deferred.done(mine, exit)), Effect.ensuring(Ref.set(reloading, undefined))),
          scope
        )
      }
      return yield* Deferred.await(joined)
    })

  /** The catalog, cached; the cache follows the stored revision, so any process's change lands. */
  const current: Effect.Effect<Compiled, StoreError> = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const cached = yield* Ref.get(cache)
    if (cached !== undefined && now - cached.checkedAt < REVISION_CHECK_MS) return cached
    return yield* sharedReload(now)
  })

  const document = Effect.map(current, (c) => c.stored.document)

  /** Decodes and checks a whole document; refuses it whole with every reason. */
  const check = (input: unknown): Effect.Effect<CatalogDocument, EngineError> =>
    Either.mapLeft(
      checkCatalogDocument(input),
      (reasons) => engineError("VALIDATION_ERROR", "The catalog document is invalid", { reasons })
    )

  /**
   * Stores a document that passes `check`, whole; otherwise changes nothing. With `ifRevision`,
   * only if the stored catalog is still that revision (PRECONDITION_FAILED otherwise), so an
   * operator's change made against one revision never silently undoes another's.
   */
  const replace = (input: unknown, ifRevision?: number): Effect.Effect<StoredCatalog, EngineError | StoreError> =>
    Effect.gen(function*() {
      const doc = yield* check(input)
      const written = yield* repo.replace(doc, ifRevision)
      if (Option.isNone(written)) {
        const revision = yield* repo.revision
        return yield* Effect.fail(engineError(
          "PRECONDITION_FAILED",
          `The catalog is at revision ${revision}, not ${ifRevision}: it changed since it was read. Nothing was replaced`,
          { revision, expectedRevision: ifRevision }
        ))
      }
      const stored = written.value
      yield* keep(compile(stored, yield* Clock.currentTimeMillis))
      return stored
    })

  /**
   * The model and version a submit or estimate names. Unknown, disabled and deleted answer
   * MODEL_NOT_FOUND; a model the account may not see answers MODEL_ACCESS_DENIED.
   */
  /** The empty catalog is told of once per process, at the first submit it refuses. */
  let emptyCatalogTold = false
  const resolve = (
    account: Account,
    slug: string,
    versionId: string | undefined
  ): Effect.Effect<ResolvedModel, EngineError | StoreError> =>
    Effect.gen(function*() {
      const { stored } = yield* current
      const model = findModel(stored.document.models, slug)
      if (model === undefined) {
        if (stored.document.models.length === 0 && !emptyCatalogTold) {
          emptyCatalogTold = true
          yield* Effect.logWarning(
            "the catalog is empty, so every submit answers MODEL_NOT_FOUND: give makeEngine a catalog " +
              "(`catalog: demoCatalog` to try the demo provider), or load one with PUT /admin/catalog or CATALOG_FILE"
          )
        }
        return yield* Effect.fail(engineError("MODEL_NOT_FOUND", `No model "${slug}"`, { model: slug }))
      }
      if (!canSee(model, account)) {
        return yield* Effect.fail(
          engineError("MODEL_ACCESS_DENIED", `This account has no access to the model "${slug}"`, { model: slug })
        )
      }
      const version = versionId === undefined
        ? defaultVersion(model)
        : model.versions.find((v) => v.versionId === versionId && isUsable(v))
      if (version === undefined) {
        return yield* Effect.fail(
          engineError(
            "MODEL_NOT_FOUND",
            versionId === undefined
              ? `The model "${slug}" has no available version`
              : `The model "${slug}" has no available version "${versionId}"`,
            { model: slug, version: versionId ?? null }
          )
        )
      }
      return { model, version }
    })

  /** Looks a job's model and version up again at run time, whatever their visibility. */
  const forJob = (slug: string, versionId: string): Effect.Effect<ResolvedModel | undefined, StoreError> =>
    Effect.map(current, ({ stored }) => {
      const model = stored.document.models.find((m) => m.slug === slug)
      const version = model?.versions.find((v) => v.versionId === versionId)
      return model !== undefined && version !== undefined ? { model, version } : undefined
    })

  const validateInput = (resolved: ResolvedModel, input: unknown): Effect.Effect<void, EngineError | StoreError> =>
    Effect.gen(function*() {
      const { validators } = yield* current
      const cacheKey = `${resolved.model.slug}@${resolved.version.versionId}`
      let validate = validators.get(cacheKey)
      if (validate === undefined) {
        validate = compileSchema(resolved.version.inputSchema)
        validators.set(cacheKey, validate)
      }
      if (!validate(input)) {
        return yield* Effect.fail(
          engineError("INVALID_INPUT", "The input does not match the model's input schema", {
            errors: problemsOf(validate.errors)
          })
        )
      }
    })

  const snapshot = Effect.map(current, (c) => c.stored)

  return { current: document, snapshot, check, replace, resolve, forJob, validateInput } as const
})

export class Catalog extends Context.Tag("genjobs/Catalog")<Catalog, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.scoped(Catalog, make)
}

export type { CatalogDocument }
