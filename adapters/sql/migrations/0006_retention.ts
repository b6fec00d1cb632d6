import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * What the retention sweeper reads: ended jobs by their end, from an index that holds only
 * them (a job's completed_at is set when it ends), and idempotency records by age. A query on
 * `completed_at <= ?` implies the index's condition in both dialects, bound parameter or not.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX ${t.jobs_ended} ON ${t.jobs} (completed_at) WHERE completed_at IS NOT NULL`
  yield* sql`CREATE INDEX ${t.idempotency_keys_created} ON ${t.idempotency_keys} (created_at)`
})
