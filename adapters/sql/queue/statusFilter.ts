import type { SqlClient, Statement } from "effect/sql"

/**
 * A row's status (`column`, as the statement names it) in a form no index can serve, so a
 * statement over listed jobs (or webhook deliveries) finds each by its primary key and the status
 * only filters the rows found. Written plainly, statistics taken while the rows were in another
 * state (pending, then processing; few ended, then most) let the planner take the status for
 * rare, read every row in it from a status index and check each against the list.
 * PostgreSQL's `COLLATE "C"` is the same equality on text; SQLite's unary `+` is the column's value.
 */
export const statusFilter = (sql: SqlClient.SqlClient, column: Statement.Fragment = sql`status`): Statement.Fragment =>
  sql.onDialectOrElse({ pg: () => sql`${column} COLLATE "C"`, orElse: () => sql`+${column}` })
