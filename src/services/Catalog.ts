import type { ValidateFunction } from "ajv"
import { Clock, Context, Deferred, Effect, Layer, Option, Ref, Result } from "effect"
import type { Account } from "../domain/account.js"
import type { CatalogDocument, CatalogModel, ModelVersion } from "../domain/catalog.js"
import { checkCatalogDocument } from "../domain/catalogCheck.js"
import { canSee, defaultVersion, findModel, isUsable } from "../domain/catalogRules.js"
import {
  servedCatalog,
  servedModel,
  sunsetsPassed,
  unregisteredLine,
  type UnregisteredVersion,
  unregisteredVersions
} from "../domain/catalogServing.js"
import { type StoreError, ValidationError } from "../domain/errors.js"
import { InvalidInput } from "../domain/admission.js"
import { ModelAccessDenied, ModelNotFound, PreconditionFailed } from "../domain/catalog.js"
import { compileSchema, problemsOf } from "../domain/jsonSchema.js"
import { CatalogRepo, type StoredCatalog } from "../ports/CatalogRepo.js"
import { Providers } from "../ports/Provider.js"
import { StoreChanges } from "../ports/StoreChanges.js"

export interface ResolvedModel {
  readonly model: CatalogModel
  readonly version: ModelVersion
}

interface Compiled {
  readonly stored: StoredCatalog
  readonly checkedAt: number
  /** The store's catalog change generation when checked (StoreChanges); 0 without one. */
  readonly generation: number
  readonly validators: Map<string, ValidateFunction>
}

/** The catalog as this engine serves it now (see catalogServing.ts), and what it was derived from. */
export interface ServedCatalog {
  readonly document: CatalogDocument
  readonly revision: number
  /** Versions past their sunset: with the revision, the served document changes only when this does. */
  readonly sunsetsPassed: number
}

export interface CheckOptions {
  /**
   * Accept versions whose every provider is unregistered here (they are then served as
   * disabled). Only for a document this process does not own, such as the bundled server's
   * CATALOG_FILE, which a fleet of processes with different credentials shares.
   */
  readonly allowUnregisteredProviders?: boolean | undefined
}

/** Another process's catalog change shows here within this long at most (sooner when the store signals it). */
const REVISION_CHECK_MS = 2_000

export const make = Effect.gen(function*() {
  const repo = yield* CatalogRepo
  const providers = yield* Providers
  const isRegistered = (providerId: string) => Option.isSome(providers.forProvider(providerId))
  const cache = yield* Ref.make<Compiled | undefined>(undefined)
  // A store that tells of catalog changes drops the cache when one is heard; the revision is still
  // checked every REVISION_CHECK_MS at most (one read per process, not per request).
  const changes = yield* Effect.serviceOption(StoreChanges)
  const generation = () => (Option.isSome(changes) ? changes.value.generation("catalog") : 0)
  const trustMs = Option.isSome(changes) ? Math.min(changes.value.maxAgeMs, REVISION_CHECK_MS) : REVISION_CHECK_MS
  /** Owns the shared reloads: the engine's shutdown interrupts one in flight. */
  const scope = yield* Effect.scope

  const compile = (stored: StoredCatalog, now: number, checked: number): Compiled => ({
    stored,
    checkedAt: now,
    generation: checked,
    validators: new Map()
  })

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
      // Taken before the read: a change heard while it runs makes the result stale at once.
      const checked = generation()
      const cached = yield* Ref.get(cache)
      if (cached !== undefined && (yield* repo.revision) === cached.stored.revision) {
        return yield* keep({ ...cached, checkedAt: now, generation: checked })
      }
      return yield* keep(compile(yield* repo.load, now, checked))
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
        // The slot is emptied before the answer is given: the waiters may run at once, and a caller
        // coming after a failed check must check again, not join the finished one.
        yield* Effect.forkIn(
          Effect.onExit(reload(now), (exit) => Effect.andThen(Ref.set(reloading, undefined), Deferred.done(mine, exit))),
          scope
        )
      }
      return yield* Deferred.await(joined)
    })

  /** The catalog, cached; the cache follows the stored revision, so any process's change lands. */
  // Read in place (no generator, no effect per step): every submit reads it twice.
  const current: Effect.Effect<Compiled, StoreError> = Effect.withFiber((fiber) => {
    const now = fiber.getRef(Clock.Clock).currentTimeMillisUnsafe()
    const cached = Ref.getUnsafe(cache)
    return cached !== undefined && cached.generation === generation() && now - cached.checkedAt < trustMs
      ? Effect.succeed(cached)
      : sharedReload(now)
  })

  const served: Effect.Effect<ServedCatalog, StoreError> = Effect.gen(function*() {
    const { stored } = yield* current
    const now = yield* Clock.currentTimeMillis
    return {
      document: servedCatalog(stored.document, now, isRegistered),
      revision: stored.revision,
      sunsetsPassed: sunsetsPassed(stored.document, now)
    }
  })

  /**
   * Decodes and checks a whole document; refuses it whole with every reason. A version a
   * request could reach whose every provider is unregistered here is refused too: it would be
   * listed and charged, then fail at run time.
   */
  const check = (input: unknown, options: CheckOptions = {}): Effect.Effect<CatalogDocument, ValidationError> =>
    Effect.gen(function*() {
      const doc = yield* Effect.fromResult(Result.mapError(
        checkCatalogDocument(input),
        (reasons) => new ValidationError({ message: "The catalog document is invalid", details: { reasons } })
      ))
      if (options.allowUnregisteredProviders === true) return doc
      const unregistered = unregisteredVersions(doc, yield* Clock.currentTimeMillis, isRegistered)
      if (unregistered.length === 0) return doc
      const reasons = unregistered.map(unregisteredLine)
      // The reasons in the message too: makeEngine's start fails with it.
      return yield* Effect.fail(new ValidationError({
        message: `The catalog names providers this engine has not registered (register them, or disable or remove these versions): ${reasons.join("; ")}`,
        details: { reasons, unregisteredProviders: unregistered }
      }))
    })

  /**
   * Stores a document that passes `check`, whole; otherwise changes nothing. With `ifRevision`,
   * only if the stored catalog is still that revision (PRECONDITION_FAILED otherwise), so an
   * operator's change made against one revision never silently undoes another's.
   */
  const replace = (
    input: unknown,
    ifRevision?: number,
    options?: CheckOptions
  ): Effect.Effect<StoredCatalog, ValidationError | PreconditionFailed | StoreError> =>
    Effect.gen(function*() {
      const doc = yield* check(input, options)
      const written = yield* repo.replace(doc, ifRevision)
      if (Option.isNone(written)) {
        const revision = yield* repo.revision
        return yield* Effect.fail(new PreconditionFailed({
          message: `The catalog is at revision ${revision}, not ${ifRevision}: it changed since it was read. Nothing was replaced`,
          details: { revision, expectedRevision: ifRevision }
        }))
      }
      const stored = written.value
      yield* keep(compile(stored, yield* Clock.currentTimeMillis, generation()))
      return stored
    })

  /** The empty catalog is told of once per process, at the first submit it refuses. */
  let emptyCatalogTold = false
  /**
   * The model and version a submit or estimate names, as served now. Unknown, disabled,
   * deleted, past their sunset and unregistered answer MODEL_NOT_FOUND; a model the account
   * may not see answers MODEL_ACCESS_DENIED.
   */
  const resolve = (
    account: Account,
    slug: string,
    versionId: string | undefined
  ): Effect.Effect<ResolvedModel, ModelNotFound | ModelAccessDenied | StoreError> =>
    Effect.gen(function*() {
      const { stored } = yield* current
      const found = findModel(stored.document.models, slug)
      if (found === undefined) {
        if (stored.document.models.length === 0 && !emptyCatalogTold) {
          emptyCatalogTold = true
          yield* Effect.logWarning(
            "the catalog is empty, so every submit answers MODEL_NOT_FOUND: give makeEngine a catalog " +
              "(`catalog: demoCatalog` to try the demo provider), or load one with PUT /admin/catalog or CATALOG_FILE"
          )
        }
        return yield* Effect.fail(new ModelNotFound({ message: `No model "${slug}"`, details: { model: slug } }))
      }
      const model = servedModel(found, yield* Clock.currentTimeMillis, isRegistered)
      if (!canSee(model, account)) {
        return yield* Effect.fail(
          new ModelAccessDenied({ message: `This account has no access to the model "${slug}"`, details: { model: slug } })
        )
      }
      const version = versionId === undefined
        ? defaultVersion(model)
        : model.versions.find((v) => v.versionId === versionId && isUsable(v))
      if (version === undefined) {
        return yield* Effect.fail(
          new ModelNotFound({
            message: versionId === undefined
              ? `The model "${slug}" has no available version`
              : `The model "${slug}" has no available version "${versionId}"`,
            details: { model: slug, version: versionId ?? null }
          })
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

  const validateInput = (resolved: ResolvedModel, input: unknown): Effect.Effect<void, InvalidInput | StoreError> =>
    Effect.flatMap(current, ({ validators }) => {
      const cacheKey = `${resolved.model.slug}@${resolved.version.versionId}`
      let validate = validators.get(cacheKey)
      if (validate === undefined) {
        validate = compileSchema(resolved.version.inputSchema)
        validators.set(cacheKey, validate)
      }
      return validate(input) ? Effect.void : Effect.fail(
        new InvalidInput({ message: "The input does not match the model's input schema", details: {
          errors: problemsOf(validate.errors)
        } })
      )
    })

  const snapshot = Effect.map(current, (c) => c.stored)

  /** The stored catalog's versions this engine cannot run (served as disabled), for a report at start. */
  const unregistered: Effect.Effect<ReadonlyArray<UnregisteredVersion>, StoreError> = Effect.gen(function*() {
    const { stored } = yield* current
    return unregisteredVersions(stored.document, yield* Clock.currentTimeMillis, isRegistered)
  })

  // The admin's use cases are named; served, snapshot and unregistered are cached reads, and
  // resolve, forJob and validateInput inner steps of a submit or a run, left plain.
  return {
    served,
    snapshot,
    check: Effect.fn("Catalog.check")(check),
    replace: Effect.fn("Catalog.replace")(replace),
    resolve,
    forJob,
    validateInput,
    unregistered
  } as const
})

export class Catalog extends Context.Service<Catalog, Effect.Success<typeof make>>()("genjobs/Catalog") {
  static readonly layer = Layer.effect(Catalog, make)
}

export type { CatalogDocument }
