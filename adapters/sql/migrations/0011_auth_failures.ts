import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * Failed authentications per client and minute bucket, shared by every process on the store so
 * a guesser spreading requests over them is counted once; the bucket index serves the prune of
 * buckets that no longer count.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE ${t.auth_failures} (
    client TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    failures BIGINT NOT NULL,
    PRIMARY KEY (client, bucket)
  )`
  yield* sql`CREATE INDEX ${t.auth_failures_bucket} ON ${t.auth_failures} (bucket)`
})
