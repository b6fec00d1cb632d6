/** The embedded store: one SQLite file on Node's own `node:sqlite` (Node 22.16+). Needs `@effect/sql` and `@effect/experimental`, and no PostgreSQL package. */
export { layerSqlite, sqliteStore } from "../adapters/sql/sqlite.js"
export { layerSqlStores } from "../adapters/sql/layer.js"
export { layerLocalJobSignal, layerLocalSignals, layerLocalWebhookSignal } from "../adapters/memory/LocalJobSignal.js"
