import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The same DDL runs on SQLite and PostgreSQL: integers are BIGINT (epoch ms, micro-cents),
 * JSON is TEXT, booleans are 0/1. One schema keeps the two dialects' queries identical.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE ${t.accounts} (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    balance_micro_cents BIGINT NOT NULL CHECK (balance_micro_cents >= 0),
    max_concurrent_jobs INTEGER NOT NULL,
    segments TEXT NOT NULL,
    allowed_models TEXT NOT NULL,
    discounts TEXT NOT NULL,
    webhook_secret TEXT NOT NULL,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE TABLE ${t.ledger} (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES ${t.accounts} (id),
    job_id TEXT,
    kind TEXT NOT NULL,
    amount_micro_cents BIGINT NOT NULL,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX ${t.ledger_job_kind} ON ${t.ledger} (job_id, kind)`
  yield* sql`CREATE INDEX ${t.ledger_account} ON ${t.ledger} (account_id, created_at)`
  yield* sql`CREATE TABLE ${t.api_keys} (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES ${t.accounts} (id),
    name TEXT NOT NULL,
    scopes TEXT NOT NULL,
    allowed_ips TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    active INTEGER NOT NULL,
    expires_at BIGINT,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE TABLE ${t.catalog} (
    id INTEGER PRIMARY KEY,
    document TEXT NOT NULL,
    revision BIGINT NOT NULL
  )`
  yield* sql`CREATE TABLE ${t.jobs} (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES ${t.accounts} (id),
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
  )`
  yield* sql`CREATE INDEX ${t.jobs_account_list} ON ${t.jobs} (account_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX ${t.jobs_account_status} ON ${t.jobs} (account_id, status)`
  yield* sql`CREATE INDEX ${t.jobs_runnable} ON ${t.jobs} (status, created_at, id)`
  yield* sql`CREATE INDEX ${t.jobs_rate_window} ON ${t.jobs} (account_id, model, version, created_at)`
  yield* sql`CREATE TABLE ${t.idempotency_keys} (
    account_id TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    job_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, idempotency_key)
  )`
})
