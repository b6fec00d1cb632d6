import { readFileSync } from "node:fs"
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
