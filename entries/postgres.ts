/** PostgreSQL as the store and the queue, shared by any number of processes. Needs `@effect/sql-pg` (its own protocol client: no `pg`), and no SQLite package. */
export { layerPostgres, postgresStore } from "../adapters/sql/postgres.js"
export { layerSqlStores } from "../adapters/sql/layer.js"
export {
  layerPgJobSignal,
  layerPgSignals,
  layerPgSignalsOver,
  makePgJobSignal,
  makePgSignals,
  makePgWebhookSignal
} from "../adapters/sql/PgJobSignal.js"
