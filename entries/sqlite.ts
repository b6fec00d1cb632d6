/** The embedded store: one SQLite file. Needs `@effect/sql` and `@effect/sql-sqlite-node`, and no PostgreSQL package. */
export { layerSqlite, sqliteStore } from "../adapters/sql/sqlite.js"
export { layerSqlStores } from "../adapters/sql/layer.js"
export { layerLocalJobSignal, layerLocalSignals, layerLocalWebhookSignal } from "../adapters/memory/LocalJobSignal.js"
