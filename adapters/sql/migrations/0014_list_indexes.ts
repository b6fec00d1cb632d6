import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * An index for each filter of each list, its columns the filter's equalities then the list's
 * order exactly (newest first on (created_at, id); the ledger oldest first), so a page is a range
 * read from the cursor on: no sort, and no rows skipped however deep the cursor (the cursor is a
 * row comparison, `(created_at, id) < (?, ?)`, which both databases match to such an index).
 *
 * The per-account job filters take the place of two indexes no query reads any more: (account_id,
 * status), from before the active count was kept by triggers, and (account_id, model, version,
 * created_at), from before rate windows had their own table. The ledger's (account_id,
 * created_at) gains id, its page's tie-break. Across accounts (the admin's lists) jobs get one
 * for status and one for model, deliveries one for no filter. A list filtered by two reads one
 * filter's index and checks the other, so its cost follows how rare the pair is, not the depth.
 *
 * They are built in the migration's transaction, so writes to these tables wait meanwhile (about
 * 13 s for a million jobs on a small machine). Hence IF NOT EXISTS: a large deployment builds them
 * beforehand with CREATE INDEX CONCURRENTLY under the same names (docs/operations.md).
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.jobs_account_status_list} ON ${t.jobs} (account_id, status, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.jobs_account_model_list} ON ${t.jobs} (account_id, model, created_at DESC, id DESC)`
  yield* sql`DROP INDEX IF EXISTS ${t.jobs_account_status}`
  yield* sql`DROP INDEX IF EXISTS ${t.jobs_rate_window}`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.jobs_status_list} ON ${t.jobs} (status, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.jobs_model_list} ON ${t.jobs} (model, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.webhook_deliveries_list} ON ${t.webhook_deliveries} (created_at DESC, id DESC)`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.webhook_deliveries_account_status} ON ${t.webhook_deliveries} (account_id, status, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.admin_audit_actor} ON ${t.admin_audit} (actor, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.admin_audit_action} ON ${t.admin_audit} (action, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.ledger_account_list} ON ${t.ledger} (account_id, created_at, id)`
  yield* sql`DROP INDEX IF EXISTS ${t.ledger_account}`
})
