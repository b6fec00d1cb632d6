/** PostgreSQL as the store and the queue, shared by any number of processes. Needs `@effect/sql-pg`. */
export { postgresStore } from "../adapters/sql/stores.js"
export { layerPostgres, layerSqlStores } from "../adapters/sql/layer.js"
export {
  layerPgJobSignal,
  layerPgSignals,
  layerPgSignalsOver,
  makePgJobSignal,
  makePgSignals,
  makePgWebhookSignal
} from "../adapters/sql/PgJobSignal.js"
