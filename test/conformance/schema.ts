import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Every name in the database's current schema (tables, their columns, indexes and, on
 * PostgreSQL, constraints), sorted, to compare two databases or one before and after.
 */
export const schemaNames = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql.onDialectOrElse({
    pg: () =>
      sql<{ entry: string }>`
        SELECT CASE c.relkind WHEN 'r' THEN 'table ' ELSE 'index ' END || c.relname AS entry
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')
        UNION ALL SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns
          WHERE table_schema = current_schema()
        UNION ALL SELECT 'constraint ' || co.conname FROM pg_constraint co JOIN pg_namespace n ON n.oid = co.connamespace
          WHERE n.nspname = current_schema()`,
    orElse: () =>
      sql<{ entry: string }>`
        SELECT type || ' ' || name AS entry FROM sqlite_master WHERE type IN ('table', 'index')
        UNION ALL SELECT 'column ' || m.name || '.' || c.name || ' ' || c.type
          FROM sqlite_master m JOIN pragma_table_info(m.name) c WHERE m.type = 'table'`
  })
  return rows.map((row) => row.entry).sort()
})

/** The table names alone. */
export const tableNames = Effect.map(schemaNames, (names) =>
  names.filter((n) => n.startsWith("table ")).map((n) => n.slice("table ".length)))

/** The name an entry of schemaNames is about (a column's table; SQLite's own autoindexes by their table). */
export const namedObject = (entry: string) =>
  entry.split(" ")[1]!.split(".")[0]!.replace(/^sqlite_autoindex_(.*)_\d+$/, "$1")
