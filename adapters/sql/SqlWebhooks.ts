import { Effect, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { olderThan } from "./cursorFragments.js"
import { indexedBy } from "./indexedBy.js"
import { DbInt, decodeRows, DeliveryRow, storeErrors, toDelivery } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeDeliveries = decodeRows(Schema.Array(DeliveryRow))
const decodeEarliest = decodeRows(Schema.Array(Schema.Struct({ at: Schema.NullOr(DbInt) })))
const decodeHeadPick = decodeRows(Schema.Array(Schema.Struct({ seen: DbInt, id: Schema.NullOr(Schema.String), in_flight: Schema.NullOr(DbInt) })))
const decodeIds = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String })))

export const makeSqlWebhooks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
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

  /** How many due deliveries a claim looks at in the order they fell due before it looks account by account. */
  const HEAD = 64

  const leased = indexedBy(sql, t.webhook_deliveries, t.webhook_deliveries_leased)
  const dueInOrder = indexedBy(sql, t.webhook_deliveries, t.webhook_deliveries_due)
  const pendingOf = indexedBy(sql, t.webhook_deliveries, t.webhook_deliveries_pending_account, sql`p`)

  /** Each account's attempts in flight (live leases), from the leased deliveries' index. */
  const busy = (now: number) =>
    sql`busy AS (SELECT account_id, COUNT(*) AS n FROM ${leased} WHERE status = 'pending' AND lease_expires_at > ${now} GROUP BY account_id)`

  /** A delivery no attempt holds: never leased, or its lease ran out. */
  const free = (d: Statement.Fragment | Statement.Identifier, now: number) => sql`(${d}.lease_expires_at IS NULL OR ${d}.lease_expires_at <= ${now})`

  /**
   * The delivery the fair order puts first (the fewest attempts in flight, then the earliest due,
   * then the id) among the HEAD deliveries that fell due first; and how many of those there were.
   * Fewer than HEAD: they are every due delivery, and the pick is the claim's. A pick of an account
   * with none in flight is the claim's too: any delivery of such an account due earlier is among
   * them. Otherwise an account with attempts in flight may have an earlier one beyond them.
   */
  const pickFromHead = (now: number, maxPerAccount: number) =>
    sql`WITH ${busy(now)},
        head AS (SELECT id FROM ${dueInOrder} WHERE status = 'pending' AND next_attempt_at <= ${now} ORDER BY next_attempt_at, id LIMIT ${HEAD})
      SELECT s.seen, c.id, c.in_flight FROM (SELECT COUNT(*) AS seen FROM head) s LEFT JOIN (
        SELECT d.id, COALESCE(b.n, 0) AS in_flight FROM head h JOIN ${t.webhook_deliveries} d ON d.id = h.id
          LEFT JOIN busy b ON b.account_id = d.account_id
        WHERE ${free(sql`d`, now)} AND COALESCE(b.n, 0) < ${maxPerAccount}
        ORDER BY COALESCE(b.n, 0), d.next_attempt_at, d.id LIMIT 1
      ) c ON 1 = 1`.pipe(Effect.flatMap(decodeHeadPick), Effect.map((rows) => rows[0]!))

  /**
   * The same order over every account's next due delivery: the accounts with pending deliveries
   * one after the other (a skip scan of the pending deliveries' index by account), each one's
   * first free due delivery from the same index. What it reads grows with the accounts waiting,
   * not with their deliveries.
   */
  const pickByAccount = (now: number, maxPerAccount: number) =>
    sql`WITH RECURSIVE ${busy(now)},
        accounts (id) AS (
          SELECT (SELECT p.account_id FROM ${pendingOf} WHERE p.status = 'pending' ORDER BY p.account_id LIMIT 1)
          UNION ALL
          SELECT (SELECT p.account_id FROM ${pendingOf} WHERE p.status = 'pending' AND p.account_id > a.id ORDER BY p.account_id LIMIT 1)
          FROM accounts a WHERE a.id IS NOT NULL
        ),
        firsts AS (
          SELECT (SELECT p.id FROM ${pendingOf} WHERE p.status = 'pending' AND p.account_id = a.id AND p.next_attempt_at <= ${now}
              AND ${free(sql`p`, now)} ORDER BY p.next_attempt_at, p.id LIMIT 1) AS id
          FROM accounts a WHERE a.id IS NOT NULL
        )
      SELECT d.id FROM firsts f JOIN ${t.webhook_deliveries} d ON d.id = f.id LEFT JOIN busy b ON b.account_id = d.account_id
      WHERE COALESCE(b.n, 0) < ${maxPerAccount}
      ORDER BY COALESCE(b.n, 0), d.next_attempt_at, d.id LIMIT 1`.pipe(Effect.flatMap(decodeIds), Effect.map((rows) => rows[0]?.id))

  const repo: WebhookDeliveryRepo["Service"] = {
    claimDue: ({ leaseMs, maxPerAccount, now, workerId }) =>
      sql.withTransaction(Effect.gen(function*() {
        if (maxPerAccount < 1) return Option.none()
        yield* serialiseClaims
        const head = yield* pickFromHead(now, maxPerAccount)
        // Every due delivery was among the first, or the pick is an account's with none in flight.
        const headDecides = head.seen < HEAD || head.in_flight === 0
        const id = headDecides ? head.id : yield* pickByAccount(now, maxPerAccount)
        if (id === null || id === undefined) return Option.none()
        // Under the claims' lock (PostgreSQL) or the one writer (SQLite) the delivery is as read;
        // the lease is still taken only from a pending delivery no attempt holds.
        const rows = yield* decodeDeliveries(
          yield* sql`UPDATE ${t.webhook_deliveries} SET lease_owner = ${workerId}, lease_expires_at = ${now + leaseMs}
            WHERE id = ${id} AND status = 'pending' AND ${free(t.webhook_deliveries, now)} RETURNING *`
        )
        return Option.map(Option.fromNullishOr(rows[0]), toDelivery)
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
