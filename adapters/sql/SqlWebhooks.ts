import { Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { olderThan } from "./cursorFragments.js"
import { DbInt, decodeRows, DeliveryRow, storeErrors, toDelivery } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeDeliveries = decodeRows(Schema.Array(DeliveryRow))
const decodeEarliest = decodeRows(Schema.Array(Schema.Struct({ at: Schema.NullOr(DbInt) })))

export const makeSqlWebhooks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  const skipLocked = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE OF d SKIP LOCKED"), orElse: () => sql.literal("") })
  const forUpdate = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
  /**
   * Claims count other claims' live leases, which concurrent PostgreSQL transactions would not
   * see yet: one transaction-scoped advisory lock (per prefix) takes claims one at a time, so the
   * per-account cap holds exactly. Claims are short; attempts run outside it. SQLite's single
   * writer serialises them already.
   */
  const serialiseClaims = sql.onDialectOrElse({
    pg: () => sql`SELECT pg_advisory_xact_lock(hashtext(${`${t.prefix}webhook claims`}))`.pipe(Effect.asVoid),
    orElse: () => Effect.void
  })

  const repo: WebhookDeliveryRepo["Service"] = {
    claimDue: ({ leaseMs, maxPerAccount, now, workerId }) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* serialiseClaims
        const rows = yield* decodeDeliveries(
          yield* sql`WITH busy AS (
              SELECT account_id, COUNT(*) AS n FROM ${t.webhook_deliveries}
              WHERE status = 'pending' AND lease_expires_at > ${now}
              GROUP BY account_id
            )
            SELECT d.* FROM ${t.webhook_deliveries} d LEFT JOIN busy b ON b.account_id = d.account_id
            WHERE d.status = 'pending' AND d.next_attempt_at <= ${now}
              AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= ${now})
              AND COALESCE(b.n, 0) < ${maxPerAccount}
            ORDER BY COALESCE(b.n, 0), d.next_attempt_at, d.id LIMIT 1 ${skipLocked}`
        )
        const due = rows[0]
        if (due === undefined) return Option.none()
        yield* sql`UPDATE ${t.webhook_deliveries} SET lease_owner = ${workerId}, lease_expires_at = ${now + leaseMs}
          WHERE id = ${due.id}`
        return Option.some({ ...toDelivery(due), leaseOwner: workerId, leaseExpiresAt: now + leaseMs })
      })).pipe(storeErrors("claim webhook delivery")),

    nextAttemptAfter: (now) =>
      sql`SELECT MIN(next_attempt_at) AS at FROM ${t.webhook_deliveries}
        WHERE status = 'pending' AND next_attempt_at > ${now}`.pipe(
        Effect.flatMap(decodeEarliest),
        Effect.map((rows) => Option.fromNullishOr(rows[0]?.at)),
        storeErrors("read next webhook attempt")
      ),

    recordAttempt: (id, workerId, attempt, outcome) =>
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* decodeDeliveries(yield* sql`SELECT * FROM ${t.webhook_deliveries} WHERE id = ${id} ${forUpdate}`)
        const current = rows[0]
        if (current === undefined || current.status !== "pending" || current.lease_owner !== workerId) return false
        yield* sql`UPDATE ${t.webhook_deliveries} SET
            status = ${outcome.status},
            attempts = ${JSON.stringify([...current.attempts, attempt])},
            next_attempt_at = ${outcome.status === "pending" ? outcome.nextAttemptAt : null},
            lease_owner = NULL,
            lease_expires_at = NULL
          WHERE id = ${id}`
        return true
      })).pipe(storeErrors("record webhook attempt")),

    list: ({ accountId, after, jobId, limit, status }) =>
      sql`SELECT * FROM ${t.webhook_deliveries} WHERE ${
        sql.and([
          sql`account_id = ${accountId}`,
          ...(jobId === undefined ? [] : [sql`job_id = ${jobId}`]),
          ...(status === undefined ? [] : [sql`status = ${status}`]),
          ...olderThan(sql, after)
        ])
      } ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.pipe(
        Effect.flatMap(decodeDeliveries),
        Effect.map((rows) => rows.map(toDelivery)),
        storeErrors("list webhook deliveries")
      ),

    get: (id) =>
      sql`SELECT * FROM ${t.webhook_deliveries} WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeDeliveries),
        Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toDelivery)),
        storeErrors("read webhook delivery")
      ),

    retry: (id, now) =>
      sql`UPDATE ${t.webhook_deliveries} SET status = 'pending', next_attempt_at = ${now}, lease_owner = NULL, lease_expires_at = NULL
        WHERE id = ${id} AND status = 'failed' RETURNING *`.pipe(
        Effect.flatMap(decodeDeliveries),
        Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toDelivery)),
        storeErrors("retry webhook delivery")
      ),

    forJob: (jobId) =>
      sql`SELECT * FROM ${t.webhook_deliveries} WHERE job_id = ${jobId} ORDER BY created_at`.pipe(
        Effect.flatMap(decodeDeliveries),
        Effect.map((rows) => rows.map(toDelivery)),
        storeErrors("read webhook deliveries")
      )
  }
  return repo
})
