import type { SqlClient, Statement } from "effect/sql"

/**
 * `table` as a read names it that must go through `index`: on SQLite `table INDEXED BY index`,
 * on PostgreSQL the table alone (`alias`, when given, is the name the statement reads it by).
 *
 * The engine runs no ANALYZE, so SQLite plans without statistics, and it takes an equality on
 * `status` for the rarest term: written plainly, these reads went through the status index and
 * read every job of that status (every ended job, every processing one), then sorted them.
 * `INDEXED BY` is a requirement, not an estimate: a statement that could no longer use its index
 * fails when it is prepared, where the plan tests see it (docs/decisions.md, "SQLite's reads of
 * leases and of the backlog name their index"). PostgreSQL's statistics lead it there already,
 * and its statement texts stay as they were.
 */
export const indexedBy = (
  sql: SqlClient.SqlClient,
  table: Statement.Identifier,
  index: Statement.Identifier,
  alias?: Statement.Fragment
): Statement.Fragment =>
  sql.onDialectOrElse({
    pg: () => (alias === undefined ? sql`${table}` : sql`${table} ${alias}`),
    orElse: () => (alias === undefined ? sql`${table} INDEXED BY ${index}` : sql`${table} AS ${alias} INDEXED BY ${index}`)
  })
