import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { IndexName, TableName } from "./tables.js"

/** Effect SQL's default migrations table, where the unprefixed release recorded its migrations. */
export const SHARED_MIGRATIONS = "effect_sql_migrations"

export interface LegacyMigration {
  readonly id: number
  readonly name: string
  /** The columns each table gained (a new table's are all of them). */
  readonly columns: Partial<Record<TableName, ReadonlyArray<string>>>
  readonly indexes: ReadonlyArray<IndexName>
}

/**
 * What the unprefixed release's migrations 0001..0004 created. Frozen: it describes databases
 * already deployed, whatever the migrations become.
 */
const LEGACY: ReadonlyArray<LegacyMigration> = [
  {
    id: 1,
    name: "initial",
    columns: {
      accounts: ["id", "name", "balance_micro_cents", "max_concurrent_jobs", "segments", "allowed_models", "discounts", "webhook_secret", "created_at"],
      ledger: ["id", "account_id", "job_id", "kind", "amount_micro_cents", "created_at"],
      api_keys: ["id", "account_id", "name", "scopes", "allowed_ips", "hash", "hint", "active", "expires_at", "created_at"],
      catalog: ["id", "document", "revision"],
      jobs: [
        "id", "account_id", "request_id", "model", "version", "input", "webhook_url", "status", "cost_micro_cents", "error", "outputs",
        "created_at", "estimated_completion_at", "started_at", "completed_at", "attempts", "lease_owner", "lease_expires_at"
      ],
      idempotency_keys: ["account_id", "idempotency_key", "request_hash", "job_id", "created_at"]
    },
    indexes: ["ledger_job_kind", "ledger_account", "jobs_account_list", "jobs_account_status", "jobs_runnable", "jobs_rate_window"]
  },
  {
    id: 2,
    name: "webhook_deliveries",
    columns: {
      webhook_deliveries: ["id", "job_id", "account_id", "url", "payload", "status", "attempts", "next_attempt_at", "lease_owner", "lease_expires_at", "created_at"],
      accounts: ["previous_webhook_secret", "previous_webhook_secret_expires_at"]
    },
    indexes: ["webhook_deliveries_job", "webhook_deliveries_due", "webhook_deliveries_account"]
  },
  {
    id: 3,
    name: "uploads",
    columns: {
      uploads: ["id", "account_id", "filename", "content_type", "status", "size", "created_at", "upload_url_expires_at", "expires_at", "lease_owner", "lease_expires_at"]
    },
    indexes: ["uploads_sweep"]
  },
  { id: 4, name: "upload_verification", columns: { uploads: ["verified_at"] }, indexes: ["uploads_verify"] }
]

/** The unprefixed release's footprint in this database: its recorded migrations, tables and indexes. */
export interface Legacy {
  readonly migrations: ReadonlyArray<LegacyMigration>
  readonly tables: ReadonlyArray<TableName>
  readonly indexes: ReadonlyArray<IndexName>
}

/** A table's columns in the current schema; empty when there is no such table. */
export const columnsOf = (sql: SqlClient.SqlClient, table: string) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<{ name: string }>`SELECT column_name AS name FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = ${table}`,
    orElse: () => sql<{ name: string }>`SELECT name FROM pragma_table_info(${table})`
  }).pipe(Effect.map((rows) => new Set(rows.map((row) => row.name))))

const sameSet = (a: ReadonlySet<string>, b: ReadonlyArray<string>) => a.size === b.length && b.every((x) => a.has(x))

/**
 * Finds the unprefixed release's schema, strictly: its migrations recorded under their ids and
 * names (a leading run 1..n, as the migrator applies them) AND every table those migrations
 * made, with exactly their columns. A host's own `effect_sql_migrations` rows (even one called
 * "initial") or its own `jobs` or `accounts` tables are not enough to match.
 */
export const detectLegacy = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  if ((yield* columnsOf(sql, SHARED_MIGRATIONS)).size === 0) return Option.none<Legacy>()
  const recorded = new Set(
    (yield* sql<{ migration_id: number; name: string }>`SELECT migration_id, name FROM ${sql(SHARED_MIGRATIONS)}`)
      .map((row) => `${Number(row.migration_id)} ${row.name}`)
  )
  const applied = LEGACY.filter((m) => recorded.has(`${m.id} ${m.name}`))
  if (applied.length === 0 || applied.some((m, i) => m !== LEGACY[i])) return Option.none<Legacy>()
  const expected = new Map<TableName, Array<string>>()
  for (const m of applied) {
    for (const [table, columns] of Object.entries(m.columns) as Array<[TableName, ReadonlyArray<string>]>) {
      expected.set(table, [...(expected.get(table) ?? []), ...columns])
    }
  }
  for (const [table, columns] of expected) {
    if (!sameSet(yield* columnsOf(sql, table), columns)) return Option.none<Legacy>()
  }
  return Option.some<Legacy>({ migrations: applied, tables: [...expected.keys()], indexes: applied.flatMap((m) => m.indexes) })
})
