import { Layer } from "effect"
import { layerLocalSignals } from "../memory/LocalJobSignal.js"
import { layerSqlite, layerSqlStores, type SqlStoreOptions } from "./layer.js"
import { layerPgSignalsOver } from "./PgJobSignal.js"
import { armStoreTimeout, layerPgClientWithPoolUse, type PgPoolOptions } from "./pgPool.js"

/** Every store in one SQLite file (WAL); workers and webhook dispatchers in this process are woken in-process. */
export const sqliteStore = (options: Parameters<typeof layerSqlite>[0]) => Layer.merge(layerSqlite(options), layerLocalSignals)

/**
 * Every store in PostgreSQL; LISTEN/NOTIFY wakes workers and webhook dispatchers in every
 * process sharing the database. One pool per process serves the stores and the signals (whose
 * LISTEN holds one more connection of its own): `maxConnections` bounds it (default 10).
 */
export const postgresStore = (options: PgPoolOptions & SqlStoreOptions) =>
  Layer.merge(Layer.tap(layerSqlStores(options), () => armStoreTimeout), layerPgSignalsOver(options.tablePrefix)).pipe(
    Layer.provide(layerPgClientWithPoolUse(options))
  )
