import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The queue's indexes, rate-limit counters and the leases of shared passes.
 *
 * Claims read pending jobs in claim order from a partial index that holds only pending jobs, and
 * expired leases from one that holds only processing jobs by lease expiry: neither walks
 * finished jobs, and the pending path never sorts the backlog. They replace the (status,
 * created_at, id) index, which every claim's OR across two statuses sorted in full.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX ${t.jobs_pending} ON ${t.jobs} (created_at, id) WHERE status = 'pending'`
  yield* sql`CREATE INDEX ${t.jobs_leases} ON ${t.jobs} (lease_expires_at) WHERE status = 'processing'`
  yield* sql`DROP INDEX ${t.jobs_runnable}`
  // One row per account, model version, window and bucket: submits count here instead of over jobs.
  yield* sql`CREATE TABLE ${t.rate_windows} (
    account_id TEXT NOT NULL,
    model TEXT NOT NULL,
    version TEXT NOT NULL,
    window_ms BIGINT NOT NULL,
    bucket BIGINT NOT NULL,
    n BIGINT NOT NULL,
    oldest BIGINT NOT NULL,
    PRIMARY KEY (account_id, model, version, window_ms, bucket)
  )`
  yield* sql`CREATE TABLE ${t.leases} (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at BIGINT NOT NULL
  )`
})
