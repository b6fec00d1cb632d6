import { Layer } from "effect"
import { layerLocalJobSignal } from "../memory/LocalJobSignal.js"
import { layerPostgres, layerSqlite } from "./layer.js"
import { layerPgJobSignal } from "./PgJobSignal.js"

/** Every store in one SQLite file (WAL); workers in this process are woken in-process. */
export const sqliteStore = (options: Parameters<typeof layerSqlite>[0]) => Layer.merge(layerSqlite(options), layerLocalJobSignal)

/** Every store in PostgreSQL; LISTEN/NOTIFY wakes workers in every process sharing the database. */
export const postgresStore = (options: Parameters<typeof layerPostgres>[0]) =>
  Layer.merge(layerPostgres(options), layerPgJobSignal(options))
