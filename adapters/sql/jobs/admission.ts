import { Array as Arr, Effect, Option, Schema } from "effect"
import type { JobId } from "../../../src/domain/ids.js"
import { bucketOf, type WindowUsage } from "../../../src/domain/rateLimit.js"
import type { IdempotencyRecord, JobStoreDriver } from "../../../src/ports/JobStoreDriver.js"
import type { JobSql } from "../queue/context.js"
import { DbInt, decodeRows, storeErrors } from "../rows.js"

const decodeWindows = decodeRows(Schema.Array(Schema.Struct({ window_ms: DbInt, n: DbInt, oldest: DbInt })))
const decodeIdempotency = decodeRows(
  Schema.Array(Schema.Struct({ request_hash: Schema.String, job_id: Schema.String, created_at: DbInt }))
)

/** What a submit decided in a transaction reads and records: idempotency keys and rate windows. */
export const makeAdmissionStatements = ({ sql, t }: JobSql) => {
  const readIdempotency = (accountId: string, key: string) =>
    sql`SELECT request_hash, job_id, created_at FROM ${t.idempotency_keys}
      WHERE account_id = ${accountId} AND idempotency_key = ${key}`.pipe(
      Effect.flatMap(decodeIdempotency),
      Effect.map((rows) =>
        Option.map(Option.fromNullishOr(rows[0]), (row): IdempotencyRecord => ({
          requestHash: row.request_hash,
          jobId: row.job_id as JobId,
          createdAt: row.created_at
        }))
      )
    )

  const claimIdempotency: JobStoreDriver["claimIdempotency"] = (accountId, key, { createdAt, jobId, requestHash }, notBefore) =>
    sql`INSERT INTO ${t.idempotency_keys} (account_id, idempotency_key, request_hash, job_id, created_at)
      VALUES (${accountId}, ${key}, ${requestHash}, ${jobId}, ${createdAt})
      ON CONFLICT (account_id, idempotency_key) DO UPDATE SET
        request_hash = ${requestHash}, job_id = ${jobId}, created_at = ${createdAt}
      WHERE ${t.idempotency_keys}.created_at < ${notBefore}
      RETURNING job_id`.pipe(
      // No row: a live record of the key exists (committed, or waited for) and stays.
      Effect.flatMap((saved) => (saved.length > 0 ? Effect.succeed(Option.none()) : readIdempotency(accountId, key))),
      storeErrors("claim idempotency key")
    )

  const readRateWindows: JobStoreDriver["readRateWindows"] = (key, now, windows) =>
    sql`SELECT window_ms, SUM(n) AS n, MIN(oldest) AS oldest FROM ${t.rate_windows}
      WHERE account_id = ${key.accountId} AND model = ${key.model} AND version = ${key.version}
        AND window_ms IN ${sql.in(windows.map((w) => w.windowMs))} AND oldest > ${now} - window_ms
      GROUP BY window_ms`.pipe(
      Effect.flatMap(decodeWindows),
      Effect.map((rows) =>
        windows.map((window): WindowUsage => {
          const row = rows.find((r) => r.window_ms === window.windowMs)
          return row === undefined ? { count: 0, oldest: null } : { count: row.n, oldest: row.oldest }
        })
      ),
      storeErrors("read rate-limit windows")
    )

  // sql.insert takes a non-empty list; the submit makes no call without a window to count.
  const recordRateWindows: JobStoreDriver["recordRateWindows"] = (key, now, windows) =>
    !Arr.isReadonlyArrayNonEmpty(windows) ? Effect.void : sql`INSERT INTO ${t.rate_windows} ${
      sql.insert(Arr.map(windows, (window) => ({
        account_id: key.accountId,
        model: key.model,
        version: key.version,
        window_ms: window.windowMs,
        bucket: bucketOf(window, now),
        n: 1,
        oldest: now
      })))
    } ON CONFLICT (account_id, model, version, window_ms, bucket) DO UPDATE SET
        n = ${t.rate_windows}.n + 1,
        oldest = CASE WHEN excluded.oldest < ${t.rate_windows}.oldest THEN excluded.oldest ELSE ${t.rate_windows}.oldest END`
      .pipe(Effect.asVoid, storeErrors("count rate-limit windows"))

  return { claimIdempotency, readRateWindows, recordRateWindows }
}
