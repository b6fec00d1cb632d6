import type { PgClient } from "@effect/sql-pg"
import { Layer } from "effect"
import { layerSqlStores, type SqlStoreOptions } from "./layer.js"
import { layerPgSignalsOver } from "./PgJobSignal.js"
import { makePgListener, PgListener } from "./pgListener.js"
import { armStoreTimeout, layerPgClientWithPoolUse, type PgPoolOptions } from "./pgPool.js"
import { layerPgStoreChanges } from "./PgStoreChanges.js"

// The PostgreSQL store alone: genjobs/postgres loads this file, so it must reach no SQLite package.

/**
 * The LISTEN connection of one store: a layer value of its own per call, which the stores and
 * the signals built with it share (one value in one build), and which no other store reuses
 * (Effect 4 shares a built layer with the layers provided inside it, by value: a shared constant
 * would hand a store nested in another the outer one's connection, to its database).
 */
const listenerOfOneStore = () => Layer.effect(PgListener, makePgListener)

/**
 * The stores, their cached data kept fresh by LISTEN/NOTIFY across processes (PgStoreChanges),
 * over `listener`. Statements are bounded once migrated.
 */
const pgStores = (options: SqlStoreOptions, listener: Layer.Layer<PgListener, never, PgClient.PgClient>) =>
  Layer.tap(layerSqlStores(options), () => armStoreTimeout).pipe(
    Layer.provide(layerPgStoreChanges(options.tablePrefix)),
    Layer.provide(listener)
  )

/** The stores over a pool of their own; `postgresStore` shares one with the signals. */
export const layerPostgres = (options: PgPoolOptions & SqlStoreOptions) =>
  pgStores(options, listenerOfOneStore()).pipe(Layer.provide(layerPgClientWithPoolUse(options)))

/**
 * Every store in PostgreSQL; LISTEN/NOTIFY wakes workers and webhook dispatchers in every
 * process sharing the database. One pool per process serves the stores and the signals, and one
 * LISTEN connection outside it their notifications and the stores' change hints:
 * `maxConnections` bounds the pool (default 10).
 */
export const postgresStore = (options: PgPoolOptions & SqlStoreOptions) => {
  const listener = listenerOfOneStore()
  return Layer.merge(pgStores(options, listener), layerPgSignalsOver(options.tablePrefix).pipe(Layer.provide(listener))).pipe(
    Layer.provide(layerPgClientWithPoolUse(options))
  )
}
