import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The jobs in flight of each model version, for provider limits: every limited claim counts the
 * processing jobs of the limited versions (readLimitUsage) under the limits' lock. Without this
 * index the count read every processing job (`jobs_leases`) or every job the model ever had
 * (`jobs_model_list`): with 10,000 generations of other providers in flight, 7.4 ms per claim,
 * against 0.2 ms reading the limited versions' own entries here. Partial, so a job has an entry
 * only while it is processing: one more index entry per claim, none for its other row versions.
 *
 * Built in the migration's transaction, as 0014's were (a large deployment builds it beforehand
 * with CREATE INDEX CONCURRENTLY under the same name: docs/operations.md, "Lists").
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX IF NOT EXISTS ${t.jobs_processing_version} ON ${t.jobs} (model, version) WHERE status = 'processing'`
})
