import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { StoreStats } from "../../src/ports/StoreStats.js"
import { PgPoolUse } from "./pgPoolUse.js"
import { storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

/** Pending jobs from the partial index of pending jobs; the pool's use where the client is a pool of ours. */
export const layerSqlStoreStats = Layer.effect(
  StoreStats,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* SqlTables
    const poolUse = yield* Effect.serviceOption(PgPoolUse)
    return StoreStats.of({
      pendingJobs: sql<{ readonly n: number | bigint }>`SELECT COUNT(*) AS n FROM ${t.jobs} WHERE status = 'pending'`.pipe(
        Effect.map((rows) => Number(rows[0]?.n ?? 0)),
        storeErrors("counting pending jobs")
      ),
      pool: Effect.sync(() => Option.match(poolUse, { onNone: () => undefined, onSome: (use) => use() }))
    })
  })
)
