import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * Fair shares (src/domain/fairShare.ts): each job's place in claim order, `fair_key`, and each
 * account's weight, `fair_weight`. Claims read pending jobs by (fair_key, id) instead of
 * (created_at, id), so jobs_pending and jobs_pending_version are built again on the key, and a
 * submit finds its account's last pending key from jobs_pending_account.
 *
 * Jobs waiting across the upgrade keep their order: their key is their creation time, and a job
 * submitted after it starts from the first of them. Only pending jobs' keys are ever read (a job
 * never goes back to pending), so the others keep the column's default and the upgrade writes
 * as many rows as wait, not the whole history. The indexes are built in the migration's
 * transaction, as 0014's are.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN fair_key BIGINT NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE ${t.accounts} ADD COLUMN fair_weight INTEGER NOT NULL DEFAULT 1`
  yield* sql`UPDATE ${t.jobs} SET fair_key = created_at WHERE status = 'pending'`
  yield* sql`DROP INDEX IF EXISTS ${t.jobs_pending}`
  yield* sql`CREATE INDEX ${t.jobs_pending} ON ${t.jobs} (fair_key, id) WHERE status = 'pending'`
  yield* sql`DROP INDEX IF EXISTS ${t.jobs_pending_version}`
  yield* sql`CREATE INDEX ${t.jobs_pending_version} ON ${t.jobs} (model, version, fair_key, id) WHERE status = 'pending'`
  yield* sql`CREATE INDEX ${t.jobs_pending_account} ON ${t.jobs} (account_id, fair_key) WHERE status = 'pending'`
})
