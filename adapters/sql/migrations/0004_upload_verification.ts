import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/** When the sweeper checked an upload's stored file once its upload URL had closed. */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE ${t.uploads} ADD COLUMN verified_at BIGINT`
  yield* sql`CREATE INDEX ${t.uploads_verify} ON ${t.uploads} (status, upload_url_expires_at)`
})
