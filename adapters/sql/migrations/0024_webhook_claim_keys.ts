import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The two indexes a webhook claim reads in order (SqlWebhooks `claimDue`), keyed so that the
 * claim's plan does not depend on the table's statistics: the due deliveries by due time and id
 * (the claim's order, so the first 64 are read under the limit, not sorted), and the live leases,
 * each without the status. A delivery has a due time only while pending and a lease only while
 * an attempt holds it, so the entries are the same as 0002's and 0023's indexes held, and the
 * claim names its status in a form no index serves (statusFilter). With the status in the
 * indexes, statistics taken while few deliveries were pending (a backlog built since autovacuum
 * last analyzed) let PostgreSQL read every pending delivery from the status index to count the
 * leases, and every due one to sort them: what 0023 had taken off, back for as long as the
 * statistics stayed old. They replace 0002's `due` and 0023's `leased`.
 *
 * Built in the migration's transaction, as 0023's were (a large deployment builds them
 * beforehand with CREATE INDEX CONCURRENTLY under the same names: docs/operations.md, "Lists").
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.webhook_deliveries_due_at} ON ${t.webhook_deliveries} (next_attempt_at, id)
    WHERE next_attempt_at IS NOT NULL`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.webhook_deliveries_lease_at} ON ${t.webhook_deliveries} (lease_expires_at, account_id)
    WHERE lease_expires_at IS NOT NULL`
  yield* sql`DROP INDEX IF EXISTS ${t.webhook_deliveries_due}`
  yield* sql`DROP INDEX IF EXISTS ${t.webhook_deliveries_leased}`
})
