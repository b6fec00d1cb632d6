import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * Provider progress and logs (issue 38): the job's `provider_progress` (0-100, NULL until its
 * provider reported any) and `provider_log` (JSON: where its log stands, domain/providerLogs.ts),
 * and `job_logs`, the kept lines by job and place. Lines go with their job (RetentionRepo).
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN provider_progress INTEGER`
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN provider_log TEXT`
  yield* sql`CREATE TABLE ${t.job_logs} (
    job_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at BIGINT NOT NULL,
    line TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
  )`
})
