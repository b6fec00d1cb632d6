import { Console, Effect } from "effect"
import { readFile } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { StoreError } from "../../src/domain/errors.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { Admin } from "../../src/services/Admin.js"
import { Catalog } from "../../src/services/Catalog.js"

export const DEMO_CATALOG_PATH = fileURLToPath(new URL("./demo-catalog.json", import.meta.url))

const readJson = (path: string) =>
  Effect.tryPromise({
    try: async () => JSON.parse(await readFile(path, "utf8")) as unknown,
    catch: (cause) => new StoreError({ message: `cannot read the catalog file ${path}`, cause })
  })

/** Imports a catalog file; an invalid file stops the start with its reasons. */
export const importCatalogFile = (path: string) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const stored = yield* catalog.replace(yield* readJson(path)).pipe(
      Effect.catchTag("EngineError", (error) => {
        const reasons = (error.details?.["reasons"] as ReadonlyArray<string> | undefined) ?? []
        return Effect.fail(new Error([`${path}: ${error.message}`, ...reasons.map((r) => `  - ${r}`)].join("\n")))
      })
    )
    yield* Effect.logInfo(`catalog loaded from ${path}: ${stored.document.models.length} models, revision ${stored.revision}`)
  })

/**
 * On an empty store: the demo catalog and a demo account whose key is printed once. A store
 * that already holds a catalog or accounts is left as it is.
 */
export const seedIfEmpty = Effect.gen(function*() {
  const catalogs = yield* CatalogRepo
  if ((yield* catalogs.revision) === 0) yield* importCatalogFile(DEMO_CATALOG_PATH)
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
