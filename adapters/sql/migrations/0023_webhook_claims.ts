import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * What a webhook claim reads (SqlWebhooks `claimDue`): the deliveries in flight, by lease, to count
 * each account's live attempts; and each account's pending deliveries in the order they fall due,
 * to find its next one without the others'. Without them every claim read every pending delivery
 * to count the live leases and sorted every due one to take the first: beside 100,000 due, 36-80
 * ms a claim on SQLite and 31-151 ms on PostgreSQL (under the claims' lock), so a backlog drained in as
 * many claims as it held deliveries, each costing what all of them did. Both are partial: a
 * delivery has an entry in the first only while an attempt holds its lease, in the second only
 * while it is pending.
 *
 * Built in the migration's transaction, as 0014's and 0022's were (a large deployment builds them
 * beforehand with CREATE INDEX CONCURRENTLY under the same names: docs/operations.md, "Lists").
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.webhook_deliveries_leased} ON ${t.webhook_deliveries} (lease_expires_at, account_id)
    WHERE status = 'pending' AND lease_expires_at IS NOT NULL`
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.webhook_deliveries_pending_account} ON ${t.webhook_deliveries} (account_id, next_attempt_at, id)
    WHERE status = 'pending'`
})
