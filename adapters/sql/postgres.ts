import { Layer } from "effect"
import { layerSqlStores, type SqlStoreOptions } from "./layer.js"
import { layerPgSignalsOver } from "./PgJobSignal.js"
import { layerPgListener } from "./pgListener.js"
import { armStoreTimeout, layerPgClientWithPoolUse, type PgPoolOptions } from "./pgPool.js"
import { layerPgStoreChanges } from "./PgStoreChanges.js"

// The PostgreSQL store alone: genjobs/postgres loads this file, so it must reach no SQLite package.

/**
 * The stores, their cached data kept fresh by LISTEN/NOTIFY across processes (PgStoreChanges).
 * Statements are bounded once migrated. `layerPgListener` is one value, so the stores and the
 * signals built together share one LISTEN connection.
 */
const pgStores = (options: SqlStoreOptions) =>
  Layer.tap(layerSqlStores(options), () => armStoreTimeout).pipe(
    Layer.provide(layerPgStoreChanges(options.tablePrefix)),
    Layer.provide(layerPgListener)
  )

/** The stores over a pool of their own; `postgresStore` shares one with the signals. */
export const layerPostgres = (options: PgPoolOptions & SqlStoreOptions) =>
  pgStores(options).pipe(Layer.provide(layerPgClientWithPoolUse(options)))

/**
 * Every store in PostgreSQL; LISTEN/NOTIFY wakes workers and webhook dispatchers in every
 * process sharing the database. One pool per process serves the stores and the signals, and one
 * LISTEN connection outside it their notifications and the stores' change hints:
 * `maxConnections` bounds the pool (default 10).
 */
export const postgresStore = (options: PgPoolOptions & SqlStoreOptions) =>
  Layer.merge(pgStores(options), layerPgSignalsOver(options.tablePrefix).pipe(Layer.provide(layerPgListener))).pipe(
    Layer.provide(layerPgClientWithPoolUse(options))
  )
