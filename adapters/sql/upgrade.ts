import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { columnsOf, detectLegacy, type Legacy, SHARED_MIGRATIONS } from "./legacy.js"
import { migrationsTable, SqlTables } from "./tables.js"

/**
 * Moves a database of the unprefixed release to the prefixed names, data included, in one
 * transaction: renames its tables, indexes and (PostgreSQL) constraints, records its applied
 * migrations in `<prefix>migrations` and takes them out of `effect_sql_migrations` (dropped only
 * when nothing else is left in it). A no-op once `<prefix>migrations` exists.
 */
export const upgradeUnprefixed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const to = (name: string) => sql(`${t.prefix}${name}`)

  const renamePostgresNames = (legacy: Legacy) =>
    Effect.gen(function*() {
      // Constraint names PostgreSQL derived from the old table name (`accounts_pkey`, ...) take
      // the prefix, as they would on a fresh install; renaming a constraint renames its index.
      for (const table of legacy.tables) {
        const constraints = yield* sql<{ conname: string }>`SELECT conname FROM pg_constraint
          WHERE conrelid = to_regclass(${`${t.prefix}${table}`})`
        for (const { conname } of constraints.filter((c) => c.conname.startsWith(`${table}_`))) {
          yield* sql`ALTER TABLE ${to(table)} RENAME CONSTRAINT ${sql(conname)} TO ${to(conname)}`
        }
      }
      // An index dropped by hand is not recreated: the upgrade moves what is there.
      for (const index of legacy.indexes) yield* sql`ALTER INDEX IF EXISTS ${sql(index)} RENAME TO ${to(index)}`
    })

  /** SQLite cannot rename an index: each is dropped and made again under its new name. */
  const recreateSqliteIndexes = (legacy: Legacy) =>
    Effect.gen(function*() {
      for (const index of legacy.indexes) {
        const [stored] = yield* sql<{ sql: string }>`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ${index}`
        if (stored === undefined) continue
        yield* sql`DROP INDEX ${sql(index)}`
        // The stored DDL already names the renamed table (SQLite rewrote it); only the index name changes.
        yield* sql.unsafe(stored.sql.replace(/^(CREATE (?:UNIQUE )?INDEX )\S+/, `$1"${t.prefix}${index}"`))
      }
    })

  /** The migrator's own DDL for its table, so it finds the table as if it had made it. */
  const createMigrationsTable = sql.onDialectOrElse({
    pg: () =>
      sql`CREATE TABLE ${t.migrations} (
  migration_id integer primary key,
  created_at timestamp with time zone not null default now(),
  name text not null
)`,
    orElse: () =>
      sql`CREATE TABLE ${t.migrations} (
  migration_id integer PRIMARY KEY NOT NULL,
  created_at datetime NOT NULL DEFAULT current_timestamp,
  name VARCHAR(255) NOT NULL
)`
  })

  const move = (legacy: Legacy) =>
    Effect.gen(function*() {
      // SQLite (3.26+) rewrites the REFERENCES of other tables on rename; PostgreSQL's foreign
      // keys point at the table itself. Either way they keep working.
      for (const table of legacy.tables) yield* sql`ALTER TABLE ${sql(table)} RENAME TO ${to(table)}`
      yield* sql.onDialectOrElse({ pg: () => renamePostgresNames(legacy), orElse: () => recreateSqliteIndexes(legacy) })
      yield* createMigrationsTable
      const engineRows = sql.or(legacy.migrations.map((m) => sql`(migration_id = ${m.id} AND name = ${m.name})`))
      yield* sql`INSERT INTO ${t.migrations} (migration_id, created_at, name)
        SELECT migration_id, created_at, name FROM ${sql(SHARED_MIGRATIONS)} WHERE ${engineRows}`
      yield* sql`DELETE FROM ${sql(SHARED_MIGRATIONS)} WHERE ${engineRows}`
      const [left] = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(SHARED_MIGRATIONS)}`
      if (Number(left?.n) === 0) yield* sql`DROP TABLE ${sql(SHARED_MIGRATIONS)}`
      yield* Effect.logInfo(`Moved the engine's tables to the prefix "${t.prefix}"`).pipe(
        Effect.annotateLogs("migrations", legacy.migrations.map((m) => m.name).join(", "))
      )
    })

  yield* sql.withTransaction(Effect.gen(function*() {
    // Engines starting together on PostgreSQL queue here; the later ones find the work done.
    yield* sql.onDialectOrElse({
      pg: () => sql`SELECT pg_advisory_xact_lock(hashtext('genjobs: upgrade unprefixed tables'))`,
      orElse: () => Effect.void
    })
    if ((yield* columnsOf(sql, migrationsTable(t.prefix))).size > 0) return
    const legacy = yield* detectLegacy
    if (Option.isSome(legacy)) yield* move(legacy.value)
  }))
})
