import { Layer } from "effect"
import { layerLocalSignals } from "../memory/LocalJobSignal.js"
import { layerPostgres, layerSqlite } from "./layer.js"
import { layerPgSignals } from "./PgJobSignal.js"

/** Every store in one SQLite file (WAL); workers and webhook dispatchers in this process are woken in-process. */
export const sqliteStore = (options: Parameters<typeof layerSqlite>[0]) => Layer.merge(layerSqlite(options), layerLocalSignals)

/** Every store in PostgreSQL; LISTEN/NOTIFY wakes workers and webhook dispatchers in every process sharing the database. */
export const postgresStore = (options: Parameters<typeof layerPostgres>[0]) =>
  Layer.merge(layerPostgres(options), layerPgSignals(options))
