import { Array as Arr, Effect, Schema } from "effect"
import { bucketOf, MINUTE_MS, MINUTE_WINDOW } from "../../../src/domain/rateLimit.js"
import type { VersionRef } from "../../../src/domain/providerLimits.js"
import type { JobLeaseDriver } from "../../../src/ports/JobLeaseDriver.js"
import { allJobs } from "../jobs/jobRows.js"
import { DbInt, decodeRows, storeErrors } from "../rows.js"
import { makeClaimFragments } from "./claims.js"
import type { JobSql } from "./context.js"

const decodeUsage = decodeRows(
  Schema.Array(Schema.Struct({ kind: Schema.Literals(["flight", "starts"]), a: Schema.String, b: Schema.String, n: DbInt }))
)

/** The limited claim's reads and writes: the room each provider scope has, and its pending jobs. */
export const makeProviderLimitStatements = (ctx: JobSql) => {
  const { sql, t } = ctx
  const { versionRows } = makeClaimFragments(ctx)
  /** A lock only limited claims take, one per table prefix. */
  const limitsLock = `${t.prefix}provider_limits`

  const lockProviderLimits: JobLeaseDriver["lockProviderLimits"] = sql.onDialectOrElse({
    pg: () => sql`SELECT pg_advisory_xact_lock(hashtextextended(${limitsLock}, 0))`.pipe(Effect.asVoid, storeErrors("lock provider limits")),
    // SQLite's one writer serialises transactions already.
    orElse: () => Effect.void
  })

  const readLimitUsage: JobLeaseDriver["readLimitUsage"] = (versions, scopes, now) => {
    const parts = [
      // A count a version, each a range of the processing jobs' version index (migration 0022):
      // SQLite, which keeps no statistics here, read `(model, version) IN (VALUES ...)` from the
      // status index instead, through every processing job.
      ...versions.map((v) =>
        sql`SELECT 'flight' AS kind, model AS a, version AS b, COUNT(*) AS n FROM ${t.jobs}
          WHERE status = 'processing' AND model = ${v.model} AND version = ${v.version} GROUP BY model, version`
      ),
      ...(scopes.length === 0 ? [] : [
        sql`SELECT 'starts' AS kind, scope AS a, '' AS b, SUM(n) AS n FROM ${t.provider_starts}
          WHERE scope IN ${sql.in(scopes)} AND oldest > ${now - MINUTE_MS} GROUP BY scope`
      ])
    ]
    return (parts.length === 0 ? Effect.succeed([]) : sql`${sql.join(" UNION ALL ", false)(parts)}`.pipe(Effect.flatMap(decodeUsage))).pipe(
      Effect.map((rows) => ({
        inFlight: rows.flatMap((r) => (r.kind === "flight" ? [{ model: r.a, version: r.b, count: r.n }] : [])),
        starts: rows.flatMap((r) => (r.kind === "starts" ? [{ scope: r.a, count: r.n }] : []))
      })),
      storeErrors("read provider limit usage")
    )
  }

  /**
   * Whether any job of `versions` waits: for each version, an EXISTS correlated with it, so the
   * planners join the versions to the pending jobs' version index (`jobs_pending_version`) by both
   * columns, a probe a version. Written with the versions as constants and a `LIMIT 1` (or a
   * count), the planner guessed where the first waiting row would be from the model's share of all
   * rows: PostgreSQL, where the limited model held most of the table's rows but none waited,
   * scanned the whole table or every waiting job for it, and SQLite (no statistics) read every
   * pending job through the status index.
   */
  const anyPending: JobLeaseDriver["anyPending"] = (versions) =>
    versions.length === 0
      ? Effect.succeed(false)
      : sql`WITH v(model, version) AS (${versionRows(versions)}) SELECT 1 AS found FROM v WHERE EXISTS (
          SELECT 1 FROM ${t.jobs} j WHERE j.status = 'pending' AND j.model = v.model AND j.version = v.version
        )`.pipe(
        Effect.map((rows) => rows.length > 0),
        storeErrors("read whether limited versions have pending jobs")
      )

  type Versions = ReadonlyArray<VersionRef & { readonly limit: number }>
  const pendingOf: JobLeaseDriver["pendingOf"] = sql.onDialectOrElse({
    pg: () => (versions: Versions) =>
      sql`SELECT j.* FROM jsonb_to_recordset(${JSON.stringify(versions)}::jsonb) AS v(model text, version text, "limit" int)
        CROSS JOIN LATERAL (
          SELECT * FROM ${t.jobs} WHERE status = 'pending' AND model = v.model AND version = v.version
          ORDER BY fair_key, id LIMIT v."limit" FOR UPDATE SKIP LOCKED
        ) AS j`.pipe(Effect.flatMap(allJobs), storeErrors("read pending jobs of limited versions")),
    orElse: () => (versions: Versions) =>
      Effect.map(
        Effect.forEach(versions, (v) =>
          sql`SELECT * FROM ${t.jobs} WHERE status = 'pending' AND model = ${v.model} AND version = ${v.version}
            ORDER BY fair_key, id LIMIT ${v.limit}`.pipe(Effect.flatMap(allJobs))),
        (found) => found.flat()
      ).pipe(storeErrors("read pending jobs of limited versions"))
  })

  const recordStarts: JobLeaseDriver["recordStarts"] = (starts, now) =>
    (!Arr.isReadonlyArrayNonEmpty(starts)
      ? Effect.void
      : sql`INSERT INTO ${t.provider_starts} ${
        sql.insert(Arr.map(starts, ({ count, scope }) => ({ scope, bucket: bucketOf(MINUTE_WINDOW, now), n: count, oldest: now })))
      } ON CONFLICT (scope, bucket) DO UPDATE SET
          n = ${t.provider_starts}.n + excluded.n,
          oldest = CASE WHEN excluded.oldest < ${t.provider_starts}.oldest THEN excluded.oldest ELSE ${t.provider_starts}.oldest END`
        .pipe(Effect.asVoid)).pipe(storeErrors("count provider starts"))

  return { lockProviderLimits, readLimitUsage, anyPending, pendingOf, recordStarts }
}
