import type { CatalogDocument } from "../../../src/domain/catalog.js"
import document from "./demo-catalog.json" with { type: "json" }

/**
 * The demo catalog: one model per category, all served by the demo provider (`DEMO_PROVIDER_ID`).
 * What the bundled server loads into an empty store, and a start for your own
 * (`makeEngine({ catalog: demoCatalog, ... })`). Checked against the catalog's schema by the tests.
 */
export const demoCatalog = document as unknown as typeof CatalogDocument.Encoded
