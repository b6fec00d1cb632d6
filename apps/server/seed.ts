import { Console, Effect } from "effect"
import { readFile } from "node:fs/promises"
import { AccountRepo, Admin, Catalog, CatalogRepo, demoCatalog } from "genjobs"

const readJson = (path: string) =>
  Effect.tryPromise({
    try: async () => JSON.parse(await readFile(path, "utf8")) as unknown,
    catch: (cause) => new Error(`cannot read the catalog file ${path}: ${String(cause)}`)
  })

/**
 * Imports a catalog document; an invalid one stops the start with its reasons. With
 * `allowUnregisteredProviders`, versions whose providers this server has no credential for are
 * stored all the same (the start report names them, and they are served as disabled).
 */
const importCatalog = (document: unknown, source: string, options?: { readonly allowUnregisteredProviders: boolean }) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const stored = yield* catalog.replace(document, undefined, options).pipe(
      Effect.catchTag(["ValidationError", "PreconditionFailed"], (error) => {
        const reasons = (error.details?.["reasons"] as ReadonlyArray<string> | undefined) ?? []
        return Effect.fail(new Error([`${source}: ${error.message}`, ...reasons.map((r) => `  - ${r}`)].join("\n")))
      })
    )
    yield* Effect.logInfo(`catalog loaded from ${source}: ${stored.document.models.length} models, revision ${stored.revision}`)
  })

/**
 * CATALOG_FILE: a deployment's catalog, shared by processes that may hold different provider
 * credentials, so a version this one cannot run is reported rather than refused.
 */
export const importCatalogFile = (path: string) =>
  Effect.flatMap(readJson(path), (document) => importCatalog(document, path, { allowUnregisteredProviders: true }))

/**
 * On an empty store: the demo catalog and a demo account whose key is printed once. A store
 * that already holds a catalog or accounts is left as it is.
 */
export const seedIfEmpty = Effect.gen(function*() {
  const catalogs = yield* CatalogRepo
  if ((yield* catalogs.revision) === 0) yield* importCatalog(demoCatalog, "the demo catalog")
  const accounts = yield* AccountRepo
  if ((yield* accounts.count) > 0) return
  const admin = yield* Admin
  const account = yield* admin.createAccount({
    name: "Demo account",
    creditsMicroCents: 100_000_000,
    maxConcurrentJobs: 5,
    segments: [],
    allowedModels: [],
    discounts: []
  })
  const key = yield* admin.createKey(account.id, { name: "demo", scopes: [], allowedIPs: [], expiresAt: null })
  yield* Console.log(
    [
      "",
      "  Demo account created: " + account.id + " ($100.00 of credit)",
      "  Demo API key (shown only this once; keep it):",
      "",
      "    " + key.secret,
      ""
    ].join("\n")
  )
})
