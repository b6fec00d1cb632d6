import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const demoCatalogPath = fileURLToPath(new URL("../../adapters/generators/demo/demo-catalog.json", import.meta.url))

/** A fresh copy of the bundled demo catalog document. */
export interface EditableCatalog {
  categories: Array<Record<string, unknown>>
  capabilities: Array<Record<string, unknown>>
  providers: Array<Record<string, unknown>>
  models: Array<Record<string, any>>
}

export const demoCatalog = (): EditableCatalog =>
  JSON.parse(readFileSync(demoCatalogPath, "utf8"))

/** The demo catalog without rate limits: its submits take the plain path, not the gated one. */
export const unlimitedDemoCatalog = (): EditableCatalog => {
  const catalog = demoCatalog()
  for (const model of catalog.models) for (const version of model.versions) version.rateLimits = { requestsPerMinute: 0, requestsPerDay: 0 }
  return catalog
}

/** The demo catalog without rate limits, written to `dir/catalog.json` for CATALOG_FILE; answers its path. */
export const unlimitedDemoCatalogFile = (dir: string): string => {
  const file = join(dir, "catalog.json")
  writeFileSync(file, JSON.stringify(unlimitedDemoCatalog()))
  return file
}
