import { Effect, Layer } from "effect"
import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import { layerLocalSignals } from "../memory/LocalJobSignal.js"
import { layerSqlStores, type SqlStoreOptions } from "./layer.js"
import { checkSqliteDriver } from "./sqliteDriverCheck.js"

// The SQLite store alone: genjobs/sqlite loads this file, so it must reach no PostgreSQL package.

/**
 * SQLite file in WAL mode (the client's default), created with its directory when missing.
 * Fails with SqliteDriverError on a Node without a usable `node:sqlite`; the client is imported
 * only after that check, as importing `node:sqlite` there would throw Node's own error instead.
 */
export const layerSqlite = (options: { readonly filename: string } & SqlStoreOptions) =>
  layerSqlStores(options).pipe(
    Layer.provide(
      Layer.unwrap(
        checkSqliteDriver.pipe(
          Effect.andThen(Effect.promise(() => import("./sqliteNode/SqliteClient.js"))),
          Effect.map((SqliteClient) => {
            if (options.filename !== ":memory:") mkdirSync(dirname(options.filename), { recursive: true })
            return SqliteClient.layer({ filename: options.filename })
          })
        )
      )
    )
  )

/**
 * Every store in one SQLite file (WAL); workers and webhook dispatchers in this process are woken
 * in-process, by signals of this store's own (fresh: Effect 4 memoizes layers across nested provides).
 */
export const sqliteStore = (options: Parameters<typeof layerSqlite>[0]) => Layer.merge(layerSqlite(options), Layer.fresh(layerLocalSignals))
