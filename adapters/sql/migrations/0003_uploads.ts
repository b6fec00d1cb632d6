import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE ${t.uploads} (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES ${t.accounts} (id),
    filename TEXT NOT NULL,
    content_type TEXT NOT NULL,
    status TEXT NOT NULL,
    size BIGINT,
    created_at BIGINT NOT NULL,
    upload_url_expires_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    lease_owner TEXT,
    lease_expires_at BIGINT
  )`
  yield* sql`CREATE INDEX ${t.uploads_sweep} ON ${t.uploads} (status, expires_at)`
})
