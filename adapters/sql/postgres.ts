import { Layer } from "effect"
import { layerSqlStores, type SqlStoreOptions } from "./layer.js"
import { layerPgSignalsOver } from "./PgJobSignal.js"
import { armStoreTimeout, layerPgClientWithPoolUse, type PgPoolOptions } from "./pgPool.js"
import { layerPgStoreChanges } from "./PgStoreChanges.js"

// The PostgreSQL store alone: genjobs/postgres loads this file, so it must reach no SQLite package.

/** The stores, their cached data kept fresh by LISTEN/NOTIFY across processes (PgStoreChanges). Statements are bounded once migrated. */
const pgStores = (options: SqlStoreOptions) =>
  Layer.tap(layerSqlStores(options), () => armStoreTimeout).pipe(Layer.provide(layerPgStoreChanges(options.tablePrefix)))

/** The stores over a pool of their own; `postgresStore` shares one with the signals. */
export const layerPostgres = (options: PgPoolOptions & SqlStoreOptions) =>
  pgStores(options).pipe(Layer.provide(layerPgClientWithPoolUse(options)))

/**
 * Every store in PostgreSQL; LISTEN/NOTIFY wakes workers and webhook dispatchers in every
 * process sharing the database. One pool per process serves the stores and the signals (whose
 * LISTEN holds one more connection of its own, and the stores' change listener another):
 * `maxConnections` bounds the pool (default 10).
 */
export const postgresStore = (options: PgPoolOptions & SqlStoreOptions) =>
  Layer.merge(pgStores(options), layerPgSignalsOver(options.tablePrefix)).pipe(
    Layer.provide(layerPgClientWithPoolUse(options))
  )
