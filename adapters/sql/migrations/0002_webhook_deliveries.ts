import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The webhook outbox (rows written with a job's terminal state, claimed by dispatchers) and the
 * accounts' previous webhook secret, which keeps signing during a rotation.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE ${t.webhook_deliveries} (
    id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL REFERENCES ${t.jobs} (id),
    account_id TEXT NOT NULL REFERENCES ${t.accounts} (id),
    url TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts TEXT NOT NULL,
    next_attempt_at BIGINT,
    lease_owner TEXT,
    lease_expires_at BIGINT,
    created_at BIGINT NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX ${t.webhook_deliveries_job} ON ${t.webhook_deliveries} (job_id)`
  yield* sql`CREATE INDEX ${t.webhook_deliveries_due} ON ${t.webhook_deliveries} (status, next_attempt_at)`
  yield* sql`ALTER TABLE ${t.accounts} ADD COLUMN previous_webhook_secret TEXT`
  yield* sql`ALTER TABLE ${t.accounts} ADD COLUMN previous_webhook_secret_expires_at BIGINT`
  yield* sql`CREATE INDEX ${t.webhook_deliveries_account} ON ${t.webhook_deliveries} (account_id, created_at DESC, id DESC)`
})
