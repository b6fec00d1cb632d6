import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The audit log of admin writes, and the indexes of the admin listings: jobs and accounts
 * across accounts newest first, webhook deliveries by status. The per-account indexes already
 * serve listings filtered by account.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE ${t.admin_audit} (
    id TEXT PRIMARY KEY,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    summary TEXT NOT NULL,
    request_id TEXT,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX ${t.admin_audit_list} ON ${t.admin_audit} (created_at DESC, id DESC)`
  yield* sql`CREATE INDEX ${t.admin_audit_target} ON ${t.admin_audit} (target, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX ${t.accounts_list} ON ${t.accounts} (created_at DESC, id DESC)`
  yield* sql`CREATE INDEX ${t.jobs_list} ON ${t.jobs} (created_at DESC, id DESC)`
  yield* sql`CREATE INDEX ${t.webhook_deliveries_status} ON ${t.webhook_deliveries} (status, created_at DESC, id DESC)`
})
