import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * A pending webhook delivery whose next attempt is a retry scheduled for later is marked
 * `retry_waiting` until a claim finds it due and clears the mark (SqlWebhooks `promoteDue`). The
 * pending deliveries' index by account, which a claim walks, now leaves marked ones out: a claim
 * walked every account with a pending delivery, due or not, about 13 µs each, so accounts whose
 * receivers are down slowed every claim (docs/decisions.md, "Webhook claims beside accounts
 * whose deliveries wait for a retry"). The second index finds the marked ones in due order. The
 * retries already scheduled (pending, an attempt made, held by none) are marked here.
 *
 * Built in the migration's transaction, as 0023's were (a large deployment builds the waiting
 * index beforehand with CREATE INDEX CONCURRENTLY under the same name: docs/operations.md,
 * "Lists"; the walk's index is rebuilt under its own name).
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE ${t.webhook_deliveries} ADD COLUMN retry_waiting INTEGER NOT NULL DEFAULT 0`
  yield* sql`UPDATE ${t.webhook_deliveries} SET retry_waiting = 1
    WHERE status = 'pending' AND attempts <> '[]' AND lease_owner IS NULL AND next_attempt_at IS NOT NULL`
  yield* sql`DROP INDEX IF EXISTS ${t.webhook_deliveries_pending_account}`
  yield* sql`CREATE INDEX ${t.webhook_deliveries_pending_account} ON ${t.webhook_deliveries} (account_id, next_attempt_at, id)
    WHERE status = 'pending' AND retry_waiting = 0`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.webhook_deliveries_waiting} ON ${t.webhook_deliveries} (next_attempt_at, id)
    WHERE status = 'pending' AND retry_waiting = 1`
})
