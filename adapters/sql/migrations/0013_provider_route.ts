import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * The route each job's start was sent on (its index, provider and credential id, never a
 * secret) as JSON: written with the handle, or with the job's end when the provider finished
 * in its start call and left no handle. Null on jobs of earlier releases, whose handle carries it.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN provider_route TEXT`
})
