/** The embedded store: one SQLite file. Needs the `@effect/sql-sqlite-node` package. */
export { sqliteStore } from "../adapters/sql/stores.js"
export { layerSqlite, layerSqlStores } from "../adapters/sql/layer.js"
export { layerLocalJobSignal, layerLocalSignals, layerLocalWebhookSignal } from "../adapters/memory/LocalJobSignal.js"
