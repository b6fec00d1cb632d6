import { Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import type { Tables } from "./tables.js"

const decodeCount = decodeRows(Schema.Array(Schema.Struct({ n: DbInt })))

/**
 * An account's pending and processing jobs, from the count the triggers keep (migration 0010):
 * on PostgreSQL less its ends not yet folded, both read in one snapshot, so it equals a COUNT
 * over its jobs at that moment without walking them.
 */
export const readActiveJobs = (sql: SqlClient.SqlClient, t: Tables, accountId: string) =>
  sql.onDialectOrElse({
    pg: () =>
      sql`SELECT active_jobs - (SELECT COUNT(*) FROM ${t.active_job_ends} WHERE account_id = ${accountId}) AS n
        FROM ${t.accounts} WHERE id = ${accountId}`,
    orElse: () => sql`SELECT active_jobs AS n FROM ${t.accounts} WHERE id = ${accountId}`
  }).pipe(
    Effect.flatMap(decodeCount),
    Effect.map((rows) => rows[0]?.n ?? 0),
    storeErrors("count active jobs")
  )
