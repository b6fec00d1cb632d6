import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Upload } from "../../src/domain/upload.js"
import type { UploadRepo } from "../../src/ports/UploadRepo.js"
import { DbInt, decodeRows, storeErrors } from "./rows.js"
import { SqlTables } from "./tables.js"

const UploadRow = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  filename: Schema.String,
  content_type: Schema.String,
  status: Upload.fields.status,
  size: Schema.NullOr(DbInt),
  verified_at: Schema.NullOr(DbInt),
  created_at: DbInt,
  upload_url_expires_at: DbInt,
  expires_at: DbInt,
  lease_owner: Schema.NullOr(Schema.String),
  lease_expires_at: Schema.NullOr(DbInt)
})
const decodeUploads = decodeRows(Schema.Array(UploadRow))

const toUpload = (row: typeof UploadRow.Type): Upload => ({
  id: row.id,
  accountId: row.account_id,
  filename: row.filename,
  contentType: row.content_type,
  status: row.status,
  size: row.size,
  verifiedAt: row.verified_at,
  createdAt: row.created_at,
  uploadUrlExpiresAt: row.upload_url_expires_at,
  expiresAt: row.expires_at,
  leaseOwner: row.lease_owner,
  leaseExpiresAt: row.lease_expires_at
})

export const makeSqlUploads = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE SKIP LOCKED"), orElse: () => sql.literal("") })
  /** Leases the selected uploads to `workerId`, in one transaction with the (locking) select. */
  const lease = <E>(select: Effect.Effect<ReadonlyArray<unknown>, E>, to: { readonly workerId: string; readonly until: number }) =>
    sql.withTransaction(Effect.gen(function*() {
      const due = yield* decodeUploads(yield* select)
      if (due.length === 0) return []
      yield* sql`UPDATE ${t.uploads} SET lease_owner = ${to.workerId}, lease_expires_at = ${to.until}
        WHERE ${sql.in("id", due.map((u) => u.id))}`
      return due.map((u) => ({ ...toUpload(u), leaseOwner: to.workerId, leaseExpiresAt: to.until }))
    }))
  const repo: UploadRepo["Service"] = {
    create: (u) =>
      sql`INSERT INTO ${t.uploads} ${
        sql.insert({
          id: u.id,
          account_id: u.accountId,
          filename: u.filename,
          content_type: u.contentType,
          status: u.status,
          size: u.size,
          verified_at: u.verifiedAt,
          created_at: u.createdAt,
          upload_url_expires_at: u.uploadUrlExpiresAt,
          expires_at: u.expiresAt,
          lease_owner: u.leaseOwner,
          lease_expires_at: u.leaseExpiresAt
        })
      }`.pipe(Effect.asVoid, storeErrors("create upload")),
    get: (id) =>
      sql`SELECT * FROM ${t.uploads} WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeUploads),
        Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toUpload)),
        storeErrors("read upload")
      ),
    markUploaded: (id, size) =>
      sql`UPDATE ${t.uploads} SET size = ${size} WHERE id = ${id} AND status = 'pending' AND size IS NULL RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        storeErrors("record upload")
      ),
    unmarkUploaded: (id) =>
      sql`UPDATE ${t.uploads} SET size = NULL WHERE id = ${id} AND status = 'pending'`.pipe(
        Effect.asVoid,
        storeErrors("release upload")
      ),
    claimExpired: ({ leaseMs, limit, now, workerId }) =>
      lease(
        sql`SELECT * FROM ${t.uploads} WHERE status = 'pending' AND expires_at <= ${now}
          AND (lease_expires_at IS NULL OR lease_expires_at <= ${now})
          ORDER BY expires_at, id LIMIT ${limit} ${skipLocked}`,
        { workerId, until: now + leaseMs }
      ).pipe(storeErrors("claim expired uploads")),
    claimUnverified: ({ closedBy, leaseMs, limit, now, workerId }) =>
      lease(
        sql`SELECT * FROM ${t.uploads} WHERE status = 'pending' AND verified_at IS NULL
          AND upload_url_expires_at <= ${closedBy} AND expires_at > ${now}
          AND (lease_expires_at IS NULL OR lease_expires_at <= ${now})
          ORDER BY upload_url_expires_at, id LIMIT ${limit} ${skipLocked}`,
        { workerId, until: now + leaseMs }
      ).pipe(storeErrors("claim uploads to verify")),
    markVerified: ({ id, now, size, workerId }) =>
      sql`UPDATE ${t.uploads} SET verified_at = ${now}, size = COALESCE(size, ${size}), lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${id} AND status = 'pending' AND lease_owner = ${workerId} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        storeErrors("record upload check")
      ),
    markExpired: (id, workerId) =>
      sql`UPDATE ${t.uploads} SET status = 'expired', lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${id} AND status = 'pending' AND lease_owner = ${workerId} RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        storeErrors("expire upload")
      )
  }
  return repo
})
