import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { Tables } from "../tables.js"

/**
 * Provider limits: starts per limit scope in one-second buckets (the minute window counts these,
 * not jobs), and the pending jobs of each model version in claim order, so a limited claim reads
 * a version's oldest pending jobs without walking every other version's.
 */
export default (t: Tables) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE ${t.provider_starts} (
    scope TEXT NOT NULL,
    bucket BIGINT NOT NULL,
    n BIGINT NOT NULL,
    oldest BIGINT NOT NULL,
    PRIMARY KEY (scope, bucket)
  )`
  yield* sql`CREATE INDEX ${t.jobs_pending_version} ON ${t.jobs} (model, version, created_at, id) WHERE status = 'pending'`
})
