import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

export const demoCatalogPath = fileURLToPath(new URL("../../apps/server/demo-catalog.json", import.meta.url))

/** A fresh copy of the bundled demo catalog document. */
export const demoCatalog = (): Record<string, unknown> & { models: Array<Record<string, any>> } =>
  JSON.parse(readFileSync(demoCatalogPath, "utf8"))
