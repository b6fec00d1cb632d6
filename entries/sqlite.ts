/** The embedded store: one SQLite file on Node's own `node:sqlite`, through effect's own SQL client: no package to add, and no PostgreSQL package loaded. */
export { layerSqlite, sqliteStore } from "../adapters/sql/sqlite.js"
export { layerSqlStores } from "../adapters/sql/layer.js"
export { layerLocalJobSignal, layerLocalSignals, layerLocalWebhookSignal } from "../adapters/memory/LocalJobSignal.js"
