import { Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "../../src/domain/tablePrefix.js"

export { checkTablePrefix, DEFAULT_TABLE_PREFIX, MAX_TABLE_PREFIX_LENGTH, TablePrefixError } from "../../src/domain/tablePrefix.js"

export const TABLES = [
  "accounts",
  "ledger",
  "api_keys",
  "catalog",
  "jobs",
  "idempotency_keys",
  "webhook_deliveries",
  "uploads",
  "rate_windows",
  "leases",
  "admin_audit",
  "provider_starts",
  "active_job_ends",
  "auth_failures",
  "spend_hourly",
  "job_logs",
  "job_changes",
  "spend_daily"
] as const

export const INDEXES = [
  "ledger_job_kind",
  "ledger_account",
  "jobs_account_list",
  "jobs_account_status",
  "jobs_runnable",
  "jobs_pending",
  "jobs_leases",
  "jobs_rate_window",
  "jobs_ended",
  "idempotency_keys_created",
  "webhook_deliveries_job",
  "webhook_deliveries_due",
  "webhook_deliveries_account",
  "uploads_sweep",
  "uploads_verify",
  "admin_audit_list",
  "admin_audit_target",
  "accounts_list",
  "jobs_list",
  "webhook_deliveries_status",
  "jobs_pending_version",
  "active_job_ends_account",
  "auth_failures_bucket",
  "spend_hourly_hour",
  "jobs_account_status_list",
  "jobs_account_model_list",
  "jobs_status_list",
  "jobs_model_list",
  "webhook_deliveries_list",
  "webhook_deliveries_account_status",
  "admin_audit_actor",
  "admin_audit_action",
  "ledger_account_list",
  "jobs_pending_account",
  "job_changes_account",
  "jobs_processing_version",
  "webhook_deliveries_leased",
  "webhook_deliveries_pending_account",
  "webhook_deliveries_due_at",
  "webhook_deliveries_lease_at",
  "webhook_deliveries_waiting",
  "jobs_lease_order"
] as const

/** Triggers keeping each account's count of active jobs and its daily spend, and (PostgreSQL) their functions. */
export const ROUTINES = [
  "jobs_count_started",
  "jobs_count_ended",
  "jobs_count_deleted",
  "count_started_job",
  "count_ended_job",
  "spend_daily_inserted",
  "spend_daily_updated",
  "add_daily_spend"
] as const

export type TableName = typeof TABLES[number]
export type IndexName = typeof INDEXES[number]
type Name = TableName | IndexName | typeof ROUTINES[number] | "migrations"


export const migrationsTable = (prefix: string) => `${prefix}migrations`

/** Quoted identifiers for the prefixed names, to interpolate into queries. */
export type Tables = { readonly [K in Name]: Statement.Identifier } & { readonly prefix: string }

export class SqlTables extends Context.Service<SqlTables, Tables>()("genjobs/SqlTables") {}

export const layerSqlTables = (prefix: string = DEFAULT_TABLE_PREFIX) =>
  Layer.effect(
    SqlTables,
    Effect.gen(function*() {
      yield* checkTablePrefix(prefix)
      const sql = yield* SqlClient.SqlClient
      const names: ReadonlyArray<Name> = [...TABLES, ...INDEXES, ...ROUTINES, "migrations"]
      return { prefix, ...Object.fromEntries(names.map((name) => [name, sql(`${prefix}${name}`)])) } as Tables
    })
  )
