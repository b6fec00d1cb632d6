import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * PostgreSQL: the processing jobs' leases indexed by status, then expiry, replacing 0005's
 * `jobs_leases` (expiry alone, partial on the status). A claim's read of expired leases, the
 * reaper's and a hand-off's check name `status = 'processing'`; with statistics taken while few
 * jobs were processing (a burst of generations since autovacuum last analyzed), PostgreSQL read
 * them from `jobs_status_list`, every processing job, and sorted them: 1.8 ms for the read alone
 * beside 10,000 in flight (9.5 ms a claim), where a fresh ANALYZE made it read the leases' index.
 * With the status as the index's first column, this index serves every condition the status
 * list's does, in expiry order and from a tenth of its size, so it costs less whatever the
 * statistics estimate: it was the plan with old, fresh and overstated statistics, expired leases
 * or none (docs/decisions.md, "The jobs' expired leases read by status and expiry"). SQLite keeps
 * `jobs_leases`: its reads name the index (indexedBy.ts) and it keeps no statistics.
 *
 * Built in the migration's transaction (`IF NOT EXISTS`: a large deployment builds it beforehand
 * with CREATE INDEX CONCURRENTLY under the same name, docs/operations.md, "Lists").
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function*() {
        yield* sql`CREATE INDEX IF NOT EXISTS ${t.jobs_lease_order} ON ${t.jobs} (status, lease_expires_at) WHERE status = 'processing'`
        yield* sql`DROP INDEX IF EXISTS ${t.jobs_leases}`
      }),
    orElse: () => Effect.void
  })
})
