import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { AuthFailures } from "../../src/ports/AuthFailures.js"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeCounts = decodeRows(Schema.Array(Schema.Struct({ bucket: DbInt, failures: DbInt })))

/** Failed authentications over SQLite or PostgreSQL (migration 0011): one counter row per client and minute bucket. */
export const makeSqlAuthFailures = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables

  return {
    recent: (client, bucket) =>
      sql`SELECT bucket, failures FROM ${t.auth_failures} WHERE client = ${client} AND bucket >= ${bucket - 1}`.pipe(
        Effect.flatMap(decodeCounts),
        Effect.map((rows) => ({
          current: rows.find((row) => row.bucket === bucket)?.failures ?? 0,
          previous: rows.find((row) => row.bucket === bucket - 1)?.failures ?? 0
        })),
        storeErrors("read failed authentications")
      ),
    record: (client, bucket) =>
      sql`INSERT INTO ${t.auth_failures} (client, bucket, failures) VALUES (${client}, ${bucket}, 1)
        ON CONFLICT (client, bucket) DO UPDATE SET failures = ${t.auth_failures}.failures + 1`.pipe(
        Effect.asVoid,
        storeErrors("record a failed authentication")
      ),
    prune: (bucket) =>
      sql`DELETE FROM ${t.auth_failures} WHERE bucket < ${bucket}`.pipe(Effect.asVoid, storeErrors("prune failed authentications"))
  } satisfies AuthFailures["Service"]
})
