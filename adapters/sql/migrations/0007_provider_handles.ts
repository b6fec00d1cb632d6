import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * A job's provider start, kept with the job so any worker resumes the same generation after a
 * crash: the phase (`starting` is committed before the provider is asked, `started` with the
 * handle right after), the handle as JSON, and how many starts were asked.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN provider_phase TEXT`
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN provider_handle TEXT`
  yield* sql`ALTER TABLE ${t.jobs} ADD COLUMN provider_starts BIGINT NOT NULL DEFAULT 0`
})
