import { Effect, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { DeliveryAttempt } from "../../src/domain/webhook.js"
import type { StoreError } from "../../src/domain/errors.js"
import type { AttemptOutcome, WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { makeWriteBatcher } from "../../src/services/writeBatcher.js"
import { olderThan } from "./cursorFragments.js"
import { indexedBy } from "./indexedBy.js"
import { byId, listedInPg } from "./queue/lockOrder.js"
import { statusFilter } from "./queue/statusFilter.js"
import { DbInt, decodeRows, DeliveryRow, storeErrors, toDelivery } from "./rows.js"
import { SqlTables } from "./tables.js"

const decodeDeliveries = decodeRows(Schema.Array(DeliveryRow))
const decodeEarliest = decodeRows(Schema.Array(Schema.Struct({ at: Schema.NullOr(DbInt) })))
const decodeHeadPicks = decodeRows(Schema.Array(Schema.Struct({ seen: DbInt, id: Schema.NullOr(Schema.String), place: Schema.NullOr(DbInt) })))
const decodeWalk = decodeRows(Schema.Array(Schema.Struct({ walked: DbInt, id: Schema.NullOr(Schema.String) })))
const decodeIds = decodeRows(Schema.Array(Schema.Struct({ id: Schema.String })))

interface AttemptRecord {
  readonly id: string
  readonly workerId: string
  readonly attempt: DeliveryAttempt
  readonly outcome: AttemptOutcome
}

export const makeSqlWebhooks = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = yield* SqlTables
  /**
   * The delivery's attempts (a compact JSON array, as JSON.stringify writes it) with `attempt` at
   * its end, in the recording UPDATE itself, so an attempt is one statement with no read before
   * it. Text, not jsonb: PostgreSQL's jsonb refuses the \u0000 a receiver's body may hold.
   */
  const appendAttempt = (attempt: DeliveryAttempt) =>
    sql`substr(attempts, 1, length(attempts) - 1) || CASE WHEN attempts = '[]' THEN '' ELSE ',' END || ${JSON.stringify(attempt)} || ']'`
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
  /**
   * The head decides a claim when few deliveries are due or each of the first due is an idle
   * account's; in a backlog of accounts at work it decided almost none (6 of 500 claims of a
   * drain), and the walk after it cost as much again. After a walk through at most HEAD accounts,
   * the next claim walks at once: the walk alone gives the same picks, and it reads no more than
   * the head would while so few accounts wait. A walk through more sends the next claim to the
   * head first again.
   */
  let walkFirst = false

  /** Marked retries a claim makes walkable at a time; the rest wait for the next claim. */
  const PROMOTE_BATCH = 1_000
  /** The longest a repo goes without looking for retries that other processes marked. */
  const PROMOTE_RECHECK_MS = 1_000
  /**
   * From when this repo's claims look for marked retries that fell due: the earliest it knows of
   * (its own records, the earliest next attempt its dispatcher read), and at most
   * PROMOTE_RECHECK_MS after it last looked.
   */
  let promoteFrom = 0

  const leased = indexedBy(sql, t.webhook_deliveries, t.webhook_deliveries_lease_at)
  const dueInOrder = indexedBy(sql, t.webhook_deliveries, t.webhook_deliveries_due_at)
  const pendingOf = indexedBy(sql, t.webhook_deliveries, t.webhook_deliveries_pending_account, sql`p`)
  /** What pendingOf's index holds (migration 0027): pending deliveries but the retries still waiting to fall due. */
  const walkable = sql`p.status = 'pending' AND p.retry_waiting = 0`
  const waitingInOrder = indexedBy(sql, t.webhook_deliveries, t.webhook_deliveries_waiting)
  /** What waitingInOrder's index holds: the retries marked as waiting to fall due. */
  const waiting = sql`status = 'pending' AND retry_waiting = 1`
  /**
   * Pending delivery `p` comes after `q`'s in their account's due order, written as each planner
   * seeks the pending-by-account index with it: PostgreSQL took the due index (other accounts'
   * deliveries too) for the two-column row and seeks with the index's leading column in it;
   * SQLite seeks with the two-column row only.
   */
  const afterInAccount = sql.onDialectOrElse({
    pg: () => sql`(p.account_id, p.next_attempt_at, p.id) > (q.account_id, q.next_attempt_at, q.id)`,
    orElse: () => sql`(p.next_attempt_at, p.id) > (q.next_attempt_at, q.id)`
  })

  /**
   * Each account's attempts in flight (live leases), from the leases' index. Here and in the
   * first due deliveries' read the status only filters what the index gave (statusFilter): an
   * index with it let old statistics pick every pending delivery (migration 0024).
   */
  const busy = (now: number) =>
    sql`busy AS (SELECT account_id, COUNT(*) AS n FROM ${leased} WHERE lease_expires_at > ${now} AND ${statusFilter(sql)} = 'pending' GROUP BY account_id)`

  /** A delivery no attempt holds: never leased, or its lease ran out. */
  const free = (d: Statement.Fragment | Statement.Identifier, now: number) => sql`(${d}.lease_expires_at IS NULL OR ${d}.lease_expires_at <= ${now})`

  /**
   * `d`: the account's first free due delivery (after `q`'s, given `after`), from the pending
   * deliveries' index by account. PostgreSQL reads it in a LATERAL subquery: joined to the table
   * by the id a scalar subquery gave, as SQLite reads it, it was hashed against a sequential scan
   * of every delivery once the table held a few thousand (3 ms of a 6 ms walk in a drain of
   * 4,000). And it names the due time only beside the account, `(account, due) <= (account, now)`:
   * written alone, `due <= now` let PostgreSQL take the due deliveries' index (`due_at`, in the
   * same order) and read it through for an account whose one delivery fell due last, 100,000 rows
   * beside another account's backlog. SQLite is told the index (INDEXED BY).
   */
  const nextFree = (account: Statement.Fragment, now: number, after?: Statement.Fragment) => {
    const due = sql.onDialectOrElse({
      pg: () => sql`(p.account_id, p.next_attempt_at) <= (${account}, ${now})`,
      orElse: () => sql`p.next_attempt_at <= ${now}`
    })
    const first = (columns: Statement.Fragment) =>
      sql`SELECT ${columns} FROM ${pendingOf} WHERE ${walkable} AND p.account_id = ${account} AND ${due}
        AND ${free(sql`p`, now)}${after === undefined ? sql`` : sql` AND ${after}`} ORDER BY p.next_attempt_at, p.id LIMIT 1`
    return sql.onDialectOrElse({
      pg: () => sql`CROSS JOIN LATERAL (${first(sql`p.id, p.next_attempt_at`)}) d`,
      orElse: () => sql`JOIN ${t.webhook_deliveries} d ON d.id = (${first(sql`p.id`)})`
    })
  }

  /**
   * Up to `limit` deliveries in the fair order (fairClaims, src/domain/webhookClaims.ts: by place,
   * an account's k-th free due delivery going out with k more in flight; then due time; then id)
   * among the HEAD deliveries that fell due first, and how many of those there were. Fewer than
   * HEAD: they are every due delivery, and the picks are the claim's. `limit` picks all at place 0
   * (each the first of an account with none in flight) are the claim's too: every place-0
   * delivery beyond them fell due later. Otherwise an account's delivery beyond them may come
   * first, or be wanted to fill the claim.
   */
  const pickFromHead = (now: number, maxPerAccount: number, limit: number) =>
    sql`WITH ${busy(now)},
        head AS (SELECT id FROM ${dueInOrder} WHERE next_attempt_at <= ${now} AND ${statusFilter(sql)} = 'pending' ORDER BY next_attempt_at, id LIMIT ${HEAD}),
        -- Materialized: SQLite, left to fold it into the window below, read the whole table in
        -- account order to spare the window's sort of these few rows.
        free_head AS MATERIALIZED (
          SELECT d.id, d.account_id, d.next_attempt_at, COALESCE(b.n, 0) AS n
          FROM head h JOIN ${t.webhook_deliveries} d ON d.id = h.id LEFT JOIN busy b ON b.account_id = d.account_id
          WHERE ${free(sql`d`, now)}
        ),
        placed AS (
          SELECT id, next_attempt_at, n + ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY next_attempt_at, id) - 1 AS place
          FROM free_head
        )
      SELECT s.seen, c.id, c.place FROM (SELECT COUNT(*) AS seen FROM head) s LEFT JOIN (
        SELECT id, place, next_attempt_at FROM placed WHERE place < ${maxPerAccount} ORDER BY place, next_attempt_at, id LIMIT ${limit}
      ) c ON 1 = 1
      ORDER BY c.place, c.next_attempt_at, c.id`.pipe(Effect.flatMap(decodeHeadPicks))

  /**
   * The same order over every account with pending deliveries, one after the other (a skip scan
   * of the pending deliveries' index by account): each account's free due deliveries in due order,
   * from the same index, while its place stays under the cap and it has given fewer than `limit`.
   * What it reads grows with the accounts waiting and the claim's size, not with their deliveries.
   * `accounts` ends with a NULL row (the skip scan's end); `picks` are the claim's, in its order.
   */
  const walkCtes = (now: number, maxPerAccount: number, limit: number) =>
    sql`${busy(now)},
        accounts (id) AS (
          SELECT (SELECT p.account_id FROM ${pendingOf} WHERE ${walkable} ORDER BY p.account_id LIMIT 1)
          UNION ALL
          SELECT (SELECT p.account_id FROM ${pendingOf} WHERE ${walkable} AND p.account_id > a.id ORDER BY p.account_id LIMIT 1)
          FROM accounts a WHERE a.id IS NOT NULL
        ),
        queue (account_id, id, next_attempt_at, place, given) AS (
          SELECT a.id, d.id, d.next_attempt_at, COALESCE(b.n, 0), 1
          FROM accounts a LEFT JOIN busy b ON b.account_id = a.id ${nextFree(sql`a.id`, now)}
          WHERE a.id IS NOT NULL AND COALESCE(b.n, 0) < ${maxPerAccount}
          UNION ALL
          SELECT q.account_id, d.id, d.next_attempt_at, q.place + 1, q.given + 1
          FROM queue q ${nextFree(sql`q.account_id`, now, afterInAccount)}
          WHERE q.place + 1 < ${maxPerAccount} AND q.given < ${limit}
        ),
        picks AS (
          SELECT id, ROW_NUMBER() OVER (ORDER BY place, next_attempt_at, id) AS claim_order
          FROM queue ORDER BY place, next_attempt_at, id LIMIT ${limit}
        )`

  /** How many accounts a walk went through, beside each row it gives (one row with no pick when it gave none). */
  const walkedBeside = (rows: Statement.Fragment) =>
    sql`SELECT s.walked, r.* FROM (SELECT COUNT(id) AS walked FROM accounts) s LEFT JOIN ${rows} r ON 1 = 1 ORDER BY r.claim_order`

  /**
   * A lease on each of `ids` that is still a pending delivery no attempt holds. Under the claims'
   * lock (PostgreSQL) or the one writer (SQLite) the deliveries are as read; each is found by its
   * key (statusFilter): with statistics taken while few were pending, PostgreSQL read every
   * pending delivery from the index by account to find the claim's (2.6 ms in a drain).
   */
  const lease = (ids: ReadonlyArray<string>, now: number, leaseMs: number, workerId: string) =>
    Effect.gen(function*() {
      if (ids.length === 0) return []
      const rows = yield* decodeDeliveries(
        yield* sql`UPDATE ${t.webhook_deliveries} SET lease_owner = ${workerId}, lease_expires_at = ${now + leaseMs}
          WHERE id IN ${sql.in(ids)} AND ${statusFilter(sql)} = 'pending' AND ${free(t.webhook_deliveries, now)} RETURNING *`
      )
      const leased = new Map(rows.map((row) => [row.id, toDelivery(row)]))
      return ids.flatMap((id) => leased.get(id) ?? [])
    })

  /**
   * The walk's picks leased, and how many accounts it went through. PostgreSQL: one statement,
   * the lease an UPDATE over the picks, each found by its key (listedInPg): a round trip less
   * under the claims' lock. Joined plainly, statistics that counted few pending deliveries let
   * the planner hash the picks against a sequential scan of the table (0.7 ms of a 1.7 ms walk in
   * a drain of 4,000). SQLite: the picks, then `lease`.
   */
  const walkAndLease = sql.onDialectOrElse({
    pg: () => (now: number, maxPerAccount: number, limit: number, leaseMs: number, workerId: string) =>
      sql`WITH RECURSIVE ${walkCtes(now, maxPerAccount, limit)},
          leased AS (
            UPDATE ${t.webhook_deliveries} AS w SET lease_owner = ${workerId}, lease_expires_at = ${now + leaseMs}
            FROM picks WHERE ${listedInPg(sql, "w", "picks", "pending")} AND ${free(sql`w`, now)}
            RETURNING w.*, picks.claim_order
          )
        ${walkedBeside(sql`leased`)}`.pipe(
        Effect.flatMap((rows) =>
          Effect.zipWith(
            decodeWalk(rows.slice(0, 1)),
            decodeDeliveries(rows.filter((row) => row["id"] !== null)),
            ([first], leased) => ({ walked: first?.walked ?? 0, claimed: leased.map(toDelivery) })
          )
        )
      ),
    orElse: () => (now: number, maxPerAccount: number, limit: number, leaseMs: number, workerId: string) =>
      Effect.gen(function*() {
        const rows = yield* decodeWalk(yield* sql`WITH RECURSIVE ${walkCtes(now, maxPerAccount, limit)} ${walkedBeside(sql`picks`)}`)
        const ids = rows.flatMap(({ id }) => (id === null ? [] : [id]))
        return { walked: rows[0]?.walked ?? 0, claimed: yield* lease(ids, now, leaseMs, workerId) }
      })
  })

  /**
   * The marked retries due by `now` made walkable (PROMOTE_BATCH at most, the earliest first),
   * and when to look again. Under the claims' lock, before the claim reads: each retry is
   * unmarked once, when a claim finds it due, so what a claim walks holds due deliveries (and
   * those in flight) only.
   */
  const promoteDue = (now: number) =>
    Effect.gen(function*() {
      const promoted = yield* decodeIds(
        yield* sql`UPDATE ${t.webhook_deliveries} SET retry_waiting = 0 WHERE id IN (
          SELECT id FROM ${waitingInOrder} WHERE ${waiting} AND next_attempt_at <= ${now}
          ORDER BY next_attempt_at, id LIMIT ${PROMOTE_BATCH}
        ) RETURNING id`
      )
      if (promoted.length === PROMOTE_BATCH) {
        promoteFrom = now
        return
      }
      const [next] = yield* decodeEarliest(
        yield* sql`SELECT MIN(next_attempt_at) AS at FROM ${waitingInOrder} WHERE ${waiting} AND next_attempt_at > ${now}`
      )
      promoteFrom = Math.min(next?.at ?? Number.POSITIVE_INFINITY, now + PROMOTE_RECHECK_MS)
    })

  /** An attempt and the delivery's next state, written only while `workerId` holds the lease; true when written. */
  const recordOne = ({ attempt, id, outcome, workerId }: AttemptRecord) =>
    sql`UPDATE ${t.webhook_deliveries} SET
        status = ${outcome.status},
        attempts = ${appendAttempt(attempt)},
        next_attempt_at = ${outcome.status === "pending" ? outcome.nextAttemptAt : null},
        retry_waiting = ${outcome.status === "pending" ? 1 : 0},
        lease_owner = NULL,
        lease_expires_at = NULL
      WHERE id = ${id} AND ${statusFilter(sql)} = 'pending' AND lease_owner = ${workerId} RETURNING id`.pipe(
      Effect.flatMap(decodeIds),
      Effect.map((rows) => rows.length > 0)
    )

  /**
   * PostgreSQL: the outcomes in one UPDATE over a JSON record set, each delivery found by its key
   * (listedInPg, as the jobs' held writes find theirs) in id order, so two such writes never
   * lock rows in opposite orders. The attempts go as text inside the set, so a receiver's NUL,
   * which jsonb refuses, stays escaped in it.
   */
  const recordManyPg = (records: ReadonlyArray<AttemptRecord>) =>
    sql`WITH d AS (SELECT * FROM jsonb_to_recordset(${JSON.stringify(byId(records).map(({ attempt, id, outcome, workerId }) => ({
      id,
      workerId,
      status: outcome.status,
      attempt: JSON.stringify(attempt),
      next_attempt_at: outcome.status === "pending" ? outcome.nextAttemptAt : null
    })))}::jsonb) AS d(id text, "workerId" text, status text, attempt text, next_attempt_at bigint))
      UPDATE ${t.webhook_deliveries} AS w SET
        status = d.status,
        attempts = substr(w.attempts, 1, length(w.attempts) - 1) || CASE WHEN w.attempts = '[]' THEN '' ELSE ',' END || d.attempt || ']',
        next_attempt_at = d.next_attempt_at,
        retry_waiting = CASE WHEN d.status = 'pending' THEN 1 ELSE 0 END,
        lease_owner = NULL,
        lease_expires_at = NULL
      FROM d WHERE ${listedInPg(sql, "w", "d", "pending")} AND w.lease_owner = d."workerId"
      RETURNING w.id`.pipe(
      Effect.flatMap(decodeIds),
      Effect.map((rows) => {
        const written = new Set(rows.map((row) => row.id))
        return records.map((record) => written.has(record.id))
      })
    )

  /**
   * The outcomes that attempts ask to record meanwhile go in one write. SQLite: one transaction,
   * as alone each one's commit wrote its row's page and those of five indexes to the WAL (88 µs a
   * delivery, a third of its cost). PostgreSQL: one statement; each alone took a round trip and
   * a pooled session, and a claim's worth of attempts ending together queued for the pool
   * (docs/decisions.md, "Webhook claims wait for the attempts on their way").
   */
  const recordMany: (records: ReadonlyArray<AttemptRecord>) => Effect.Effect<ReadonlyArray<boolean>, StoreError> = sql.onDialectOrElse({
    // A delivery named twice in one UPDATE ... FROM is written once but found twice: such a batch
    // goes one statement a record, so the second finds the lease given up.
    pg: () => (records: ReadonlyArray<AttemptRecord>) =>
      (new Set(records.map((record) => record.id)).size === records.length
        ? recordManyPg(records)
        : Effect.forEach(records, recordOne)).pipe(storeErrors("record webhook attempts")),
    orElse: () => (records: ReadonlyArray<AttemptRecord>) =>
      sql.withTransaction(Effect.forEach(records, recordOne)).pipe(storeErrors("record webhook attempts"))
  })
  const recordAttempt = yield* makeWriteBatcher(recordMany, { gatherTurn: true })

  const repo: WebhookDeliveryRepo["Service"] = {
    // SQLite's one writer would take the claim and the records in turn.
    claimsBesideRecords: sql.onDialectOrElse({ pg: () => true, orElse: () => false }),
    claimDue: ({ leaseMs, limit, maxPerAccount, now, workerId }) =>
      sql.withTransaction(Effect.gen(function*() {
        if (maxPerAccount < 1 || limit < 1) return []
        yield* serialiseClaims
        if (now >= promoteFrom) yield* promoteDue(now)
        if (!walkFirst) {
          const head = yield* pickFromHead(now, maxPerAccount, limit)
          const seen = head[0]?.seen ?? 0
          const picked = head.flatMap(({ id, place }) => (id === null ? [] : [{ id, place }]))
          if (seen < HEAD || (picked.length === limit && picked.every((row) => row.place === 0))) {
            return yield* lease(picked.map((row) => row.id), now, leaseMs, workerId)
          }
        }
        const { claimed, walked } = yield* walkAndLease(now, maxPerAccount, limit, leaseMs, workerId)
        walkFirst = walked <= HEAD
        return claimed
      })).pipe(
        // A claim that failed rolled its promotion back with it: the next one looks again.
        Effect.onError(() => Effect.sync(() => (promoteFrom = 0))),
        storeErrors("claim webhook deliveries")
      ),

    nextAttemptAfter: (now) =>
      sql`SELECT MIN(next_attempt_at) AS at FROM ${dueInOrder} WHERE next_attempt_at > ${now} AND ${statusFilter(sql)} = 'pending'`.pipe(
        Effect.flatMap(decodeEarliest),
        Effect.map((rows) => Option.fromNullishOr(rows[0]?.at)),
        // A retry another process scheduled: the claims look for it from when it falls due.
        Effect.tap((at) => Effect.sync(() => Option.map(at, (due) => (promoteFrom = Math.min(promoteFrom, due))))),
        storeErrors("read next webhook attempt")
      ),

    recordAttempt: (id, workerId, attempt, outcome) =>
      Effect.suspend(() => {
        if (outcome.status === "pending") promoteFrom = Math.min(promoteFrom, outcome.nextAttemptAt)
        return recordAttempt({ id, workerId, attempt, outcome })
      }),

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
      sql`UPDATE ${t.webhook_deliveries} SET status = 'pending', next_attempt_at = ${now}, retry_waiting = 0, lease_owner = NULL, lease_expires_at = NULL
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
