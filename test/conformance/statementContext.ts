import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type JobSql, makeLeaseClock } from "../../adapters/sql/queue/context.js"
import { layerSqlTables, SqlTables } from "../../adapters/sql/tables.js"

/**
 * The job and queue statements' context as a store makes it, for plan tests that build the
 * statements themselves: the client, the default tables, and the lease clock (the database's on
 * PostgreSQL, the caller's on SQLite).
 */
export const statementContext = (databaseClock: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const t = yield* Effect.provide(Effect.gen(function*() {
      return yield* SqlTables
    }), layerSqlTables())
    return { sql, t, clock: makeLeaseClock(sql, databaseClock) } satisfies JobSql
  })
