import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The database the release before table prefixes made, frozen as literal SQL: its migrations
 * 0001..0004 statement by statement, and `effect_sql_migrations` as @effect/sql's Migrator
 * creates and fills it (Migrator.ts: migration_id, created_at, name; ids and names from the
 * `0001_initial`-style keys). Never edit it to follow the current migrations: it stands for
 * databases already deployed.
 */
export const RELEASE_MIGRATIONS: ReadonlyArray<{ readonly id: number; readonly name: string; readonly statements: ReadonlyArray<string> }> = [
  {
    id: 1,
    name: "initial",
    statements: [
      `CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        balance_micro_cents BIGINT NOT NULL CHECK (balance_micro_cents >= 0),
        max_concurrent_jobs INTEGER NOT NULL,
        segments TEXT NOT NULL,
        allowed_models TEXT NOT NULL,
        discounts TEXT NOT NULL,
        webhook_secret TEXT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
      `CREATE TABLE ledger (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        job_id TEXT,
        kind TEXT NOT NULL,
        amount_micro_cents BIGINT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
      `CREATE UNIQUE INDEX ledger_job_kind ON ledger (job_id, kind)`,
      `CREATE INDEX ledger_account ON ledger (account_id, created_at)`,
      `CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        name TEXT NOT NULL,
        scopes TEXT NOT NULL,
        allowed_ips TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        active INTEGER NOT NULL,
        expires_at BIGINT,
        created_at BIGINT NOT NULL
      )`,
      `CREATE TABLE catalog (
        id INTEGER PRIMARY KEY,
        document TEXT NOT NULL,
        revision BIGINT NOT NULL
      )`,
      `CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        request_id TEXT NOT NULL,
        model TEXT NOT NULL,
        version TEXT NOT NULL,
        input TEXT NOT NULL,
        webhook_url TEXT,
        status TEXT NOT NULL,
        cost_micro_cents BIGINT NOT NULL,
        error TEXT,
        outputs TEXT,
        created_at BIGINT NOT NULL,
        estimated_completion_at BIGINT NOT NULL,
        started_at BIGINT,
        completed_at BIGINT,
        attempts INTEGER NOT NULL,
        lease_owner TEXT,
        lease_expires_at BIGINT
      )`,
      `CREATE INDEX jobs_account_list ON jobs (account_id, created_at DESC, id DESC)`,
      `CREATE INDEX jobs_account_status ON jobs (account_id, status)`,
      `CREATE INDEX jobs_runnable ON jobs (status, created_at, id)`,
      `CREATE INDEX jobs_rate_window ON jobs (account_id, model, version, created_at)`,
      `CREATE TABLE idempotency_keys (
        account_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        job_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (account_id, idempotency_key)
      )`
    ]
  },
  {
    id: 2,
    name: "webhook_deliveries",
    statements: [
      `CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        job_id TEXT NOT NULL REFERENCES jobs (id),
        account_id TEXT NOT NULL REFERENCES accounts (id),
        url TEXT NOT NULL,
        payload TEXT NOT NULL,
        status TEXT NOT NULL,
        attempts TEXT NOT NULL,
        next_attempt_at BIGINT,
        lease_owner TEXT,
        lease_expires_at BIGINT,
        created_at BIGINT NOT NULL
      )`,
      `CREATE UNIQUE INDEX webhook_deliveries_job ON webhook_deliveries (job_id)`,
      `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at)`,
      `ALTER TABLE accounts ADD COLUMN previous_webhook_secret TEXT`,
      `ALTER TABLE accounts ADD COLUMN previous_webhook_secret_expires_at BIGINT`,
      `CREATE INDEX webhook_deliveries_account ON webhook_deliveries (account_id, created_at DESC, id DESC)`
    ]
  },
  {
    id: 3,
    name: "uploads",
    statements: [
      `CREATE TABLE uploads (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts (id),
        filename TEXT NOT NULL,
        content_type TEXT NOT NULL,
        status TEXT NOT NULL,
        size BIGINT,
        created_at BIGINT NOT NULL,
        upload_url_expires_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        lease_owner TEXT,
        lease_expires_at BIGINT
      )`,
      `CREATE INDEX uploads_sweep ON uploads (status, expires_at)`
    ]
  },
  {
    id: 4,
    name: "upload_verification",
    statements: [
      `ALTER TABLE uploads ADD COLUMN verified_at BIGINT`,
      `CREATE INDEX uploads_verify ON uploads (status, upload_url_expires_at)`
    ]
  }
]

const MIGRATOR_TABLE = {
  pg: `CREATE TABLE effect_sql_migrations (
  migration_id integer primary key,
  created_at timestamp with time zone not null default now(),
  name text not null
)`,
  sqlite: `CREATE TABLE IF NOT EXISTS effect_sql_migrations (
  migration_id integer PRIMARY KEY NOT NULL,
  created_at datetime NOT NULL DEFAULT current_timestamp,
  name VARCHAR(255) NOT NULL
)`
}

/** The release's schema with its first `upTo` migrations applied, as its Migrator left it. */
export const createReleaseSchema = (upTo = RELEASE_MIGRATIONS.length) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(Effect.gen(function*() {
      yield* sql.unsafe(sql.onDialectOrElse({ pg: () => MIGRATOR_TABLE.pg, orElse: () => MIGRATOR_TABLE.sqlite }))
      for (const migration of RELEASE_MIGRATIONS.slice(0, upTo)) {
        // The migrator records the migrations it is about to run (created_at by default), then runs them.
        yield* sql`INSERT INTO effect_sql_migrations (migration_id, name) VALUES (${migration.id}, ${migration.name})`
        for (const statement of migration.statements) yield* sql.unsafe(statement)
      }
    })))
