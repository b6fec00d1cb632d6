import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** When the sweeper checked an upload's stored file once its upload URL had closed. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE uploads ADD COLUMN verified_at BIGINT`
  yield* sql`CREATE INDEX uploads_verify ON uploads (status, upload_url_expires_at)`
})
