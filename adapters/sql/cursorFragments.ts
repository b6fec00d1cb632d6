import type { SqlClient, Statement } from "effect/sql"
import type { JobCursor } from "../../src/domain/cursor.js"

/**
 * A list's cursor as one row comparison on (created_at, id), never as `created_at < ? OR
 * (created_at = ? AND id < ?)`: PostgreSQL and SQLite start an index range scan at a row value,
 * where the OR form leaves the cursor to a filter and every page re-reads all the rows before it.
 * None when there is no cursor (the first page).
 */
export const olderThan = (sql: SqlClient.SqlClient, after: JobCursor | undefined): Array<Statement.Fragment> =>
  after === undefined ? [] : [sql`(created_at, id) < (${after.createdAt}, ${after.id})`]

/** The same for a list read oldest first. */
export const newerThan = (sql: SqlClient.SqlClient, after: JobCursor | undefined): Array<Statement.Fragment> =>
  after === undefined ? [] : [sql`(created_at, id) > (${after.createdAt}, ${after.id})`]
