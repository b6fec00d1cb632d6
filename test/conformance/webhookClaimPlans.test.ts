import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { makeSqlWebhooks } from "../../adapters/sql/SqlWebhooks.js"
import { layerSqlTables } from "../../adapters/sql/tables.js"
import type { WebhookDelivery } from "../../src/domain/webhook.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { postgresAvailable } from "../support/postgres.js"
import { T0 } from "./fixtures.js"
import { nodes, type PlanNode, planOf, planRuntime, render } from "./pgPlans.js"
import { plansOf, sqlitePlanRuntime } from "./sqlitePlans.js"
import { sentStatements } from "./sentStatement.js"

/**
 * A webhook claim reads what its pick needs, not the backlog: the live leases from the leased
 * deliveries' index, the first due deliveries in the order they fell due (a bounded range of the
 * due index), and, when those belong to an account with attempts in flight, each waiting
 * account's first due delivery from the pending deliveries' index by account. It read every
 * pending delivery to count the leases and sorted every due one: beside 100,000 due, 36-80 ms a
 * claim on SQLite and 31-151 ms on PostgreSQL, under the claims' lock (migration 0023,
 * adapters/sql/SqlWebhooks.ts). The seeds are 100,000 due deliveries of one account, 3 of them in
 * flight, and one due delivery of another account; the claim takes the other account's. At
 * 100,000 (not at 20,000) PostgreSQL's walk read that account's one delivery through the due
 * index, every busy delivery before it, when the walk named the due time alone (nextFree).
 */

const DUE = 100_000

/** Accounts named by their ids, the same on both stores. */
const insertAccounts = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>) =>
  Effect.forEach(ids, (id) =>
    sql`INSERT INTO genjobs_accounts (id, name, balance_micro_cents, max_concurrent_jobs, segments, allowed_models,
        discounts, webhook_secret, created_at)
      VALUES (${id}, ${id}, 0, 10, '[]', '[]', '[]', 'whsec_x', ${T0})`, { discard: true })

/** The seed's rows, the same on both stores (foreign keys are not checked: the deliveries' jobs are not there). */
const seedRows = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    yield* insertAccounts(sql, ["acc_busy", "acc_idle"])
    yield* sql`WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < ${DUE - 1})
      INSERT INTO genjobs_webhook_deliveries (id, job_id, account_id, url, payload, status, attempts, next_attempt_at,
        lease_owner, lease_expires_at, created_at)
      SELECT 'whd_' || n, 'job_' || n, CASE WHEN n = ${DUE - 1} THEN 'acc_idle' ELSE 'acc_busy' END, 'https://hooks.test/h', '{}',
        'pending', '[]', ${T0} + n, CASE WHEN n < 3 THEN 'd' END, CASE WHEN n < 3 THEN ${T0 + 10 * DUE} END, ${T0}
      FROM g`
  })

/** The leases the claims and the plans' EXECUTEs took, given back: each case claims from the seed as it was. */
const givenBack = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql`UPDATE genjobs_webhook_deliveries SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = 'w'`)

/**
 * What a claim of up to 4 at T0 + DUE (every delivery due, the 3 leases live) sends, and whose
 * deliveries it took: the other account's, then the one the busy account has room for.
 */
const claimSent = Effect.gen(function*() {
  let taken: ReadonlyArray<string> = []
  const sent = yield* sentStatements(Effect.flatMap(WebhookDeliveryRepo, (deliveries) =>
    Effect.map(deliveries.claimDue({ workerId: "w", now: T0 + DUE, leaseMs: 30_000, maxPerAccount: 4, limit: 4 }), (claimed) => {
      taken = claimed.map((d) => d.accountId)
    })))
  yield* givenBack
  return { sent, taken }
})

/**
 * The reads a claim sent, by kind: a repo's first claim reads the first due deliveries (the head),
 * which here do not decide it (the busy account's backlog fills them), then walks account by
 * account; the walk went through two or eight accounts, so each claim after it walks at once.
 */
const readsOf = (sent: ReadonlyArray<readonly [string, ReadonlyArray<unknown>]>) =>
  sent.filter(([text]) => text.startsWith("WITH")).map((statement) => ({
    kind: statement[0].startsWith("WITH RECURSIVE") ? "walk" as const : "head" as const,
    statement
  }))

describe("sqlite: a webhook claim beside 100,000 due deliveries", () => {
  const runtime = sqlitePlanRuntime("webhook-claim-plans")

  it("reads the leases, the first due deliveries and each waiting account's first, and sorts none of the backlog", () =>
    runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`PRAGMA foreign_keys = OFF`
      yield* seedRows(sql)
      const { sent, taken } = yield* claimSent
      expect(taken).toEqual(["acc_idle", "acc_busy"])
      const plan = yield* plansOf(Effect.forEach(sent, ([text, params]) => sql.unsafe(text, params)))
      const deliveryReads = plan.filter((line) => /^(SEARCH|SCAN) (genjobs_webhook_deliveries|p|d)\b/.test(line) && !line.includes("(id=?)"))
      expect(deliveryReads, plan.join("\n")).toEqual([
        // The retries marked as waiting that fell due, made walkable, and the next one's due time,
        // from their own index (migration 0027).
        "SEARCH genjobs_webhook_deliveries USING COVERING INDEX genjobs_webhook_deliveries_waiting (next_attempt_at<?)",
        "SEARCH genjobs_webhook_deliveries USING COVERING INDEX genjobs_webhook_deliveries_waiting (next_attempt_at>?)",
        // The first due deliveries in the order they fell due (under a limit), and the live leases.
        "SEARCH genjobs_webhook_deliveries USING INDEX genjobs_webhook_deliveries_due_at (next_attempt_at<?)",
        "SEARCH genjobs_webhook_deliveries USING INDEX genjobs_webhook_deliveries_lease_at (lease_expires_at>?)",
        // Then the first account with pending deliveries, the next after each, the leases again,
        // each account's first due delivery, and each one's next after the one before.
        "SCAN p USING COVERING INDEX genjobs_webhook_deliveries_pending_account",
        "SEARCH p USING COVERING INDEX genjobs_webhook_deliveries_pending_account (account_id>?)",
        "SEARCH genjobs_webhook_deliveries USING INDEX genjobs_webhook_deliveries_lease_at (lease_expires_at>?)",
        "SEARCH p USING INDEX genjobs_webhook_deliveries_pending_account (account_id=? AND next_attempt_at<?)",
        "SEARCH p USING INDEX genjobs_webhook_deliveries_pending_account (account_id=? AND next_attempt_at>? AND next_attempt_at<?)"
      ])
      // Sorts of what was read, none of the backlog: the first due deliveries' places and picks
      // (64 at most), the picks numbered in order and in that order, and each waiting account's next few.
      expect(plan.filter((line) => line.includes("TEMP B-TREE") && !line.includes("GROUP BY") && !line.includes("LAST TERM")), plan.join("\n"))
        .toEqual(Array(5).fill("USE TEMP B-TREE FOR ORDER BY"))
    })))
})

const pgUp = await postgresAvailable()

if (!pgUp) {
  describe.skip("postgres: a webhook claim beside 100,000 due deliveries (server not reachable)", () => {
    it("reads no more than its pick needs", () => undefined)
  })
} else {
  const seeded = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`SET session_replication_role = replica`
    yield* seedRows(sql)
    yield* sql`SET session_replication_role = DEFAULT`
    yield* sql`ANALYZE genjobs_webhook_deliveries`
    yield* sql`ALTER TABLE genjobs_webhook_deliveries SET (autovacuum_enabled = false)`
  })
  const runtime = planRuntime(seeded)

  /** The nodes under a Limit node (at any depth below it). */
  const underLimit = (node: PlanNode, limited = false): ReadonlyArray<PlanNode> => [
    ...(limited ? [node] : []),
    ...(node.Plans ?? []).flatMap((child) => underLimit(child, limited || node["Node Type"] === "Limit"))
  ]

  /** A plan's reads of the deliveries table: each by which index, or a sequential scan. */
  const reads = (plan: PlanNode) =>
    nodes(plan).filter((n) => n["Relation Name"] === "genjobs_webhook_deliveries").map((n) => `${n["Node Type"]} ${n["Index Name"] ?? ""}`.trim())

  describe("postgres: a webhook claim beside 100,000 due deliveries", () => {
    it.each(["first", "settled"] as const)("reads the leases, the first due deliveries and each waiting account's first (%s plans)", (run) =>
      runtime.runPromise(Effect.gen(function*() {
        const { sent, taken } = yield* claimSent
        expect(taken).toEqual(["acc_idle", "acc_busy"])
        const claimReads = readsOf(sent)
        expect(claimReads.map(({ kind }) => kind), sent.map(([text]) => text).join("\n")).toEqual(run === "first" ? ["head", "walk"] : ["walk"])
        for (const { kind, statement } of claimReads) {
          const plan = yield* planOf(statement, run)
          const where = `${run} plan of ${statement[0]}:\n${render(plan)}`
          expect(reads(plan).filter((r) => r.startsWith("Seq Scan") || r.endsWith("genjobs_webhook_deliveries_status")), where).toEqual([])
          // No sort takes every due delivery: the due index is read in order, under a limit.
          const dueReads = nodes(plan).filter((n) => n["Index Name"] === "genjobs_webhook_deliveries_due_at")
          expect(dueReads.length, where).toBe(kind === "head" ? 1 : 0)
          expect(dueReads.every((n) => underLimit(plan).includes(n)), where).toBe(true)
        }
        yield* givenBack
      })))
  })

  /**
   * Eight accounts' 4,000 due deliveries, round robin, each account's first 3 in flight: the
   * backlog of a drain (bench/webhookDrain.ts), where the first due belong to accounts at work and
   * the claim walks account by account. Statistics are taken while every delivery was sent, as
   * autovacuum may have left them when a backlog builds. At this size PostgreSQL hashed the walk's
   * next delivery of each account against a sequential scan of the table (3 ms of a 6 ms walk)
   * when it was joined by the id a scalar subquery gave; it is read in a LATERAL subquery. And
   * with `status = 'pending'` written plainly, the lease and the outcome read every pending
   * delivery from the index by account to find theirs (2.6 ms); each now finds its own by key.
   */
  const ACCOUNTS = 8
  const BACKLOG = 4_000
  const drainRuntime = planRuntime(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`SET session_replication_role = replica`
    yield* insertAccounts(sql, Array.from({ length: ACCOUNTS }, (_, a) => `acc_${a}`))
    yield* sql`WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < ${BACKLOG - 1})
      INSERT INTO genjobs_webhook_deliveries (id, job_id, account_id, url, payload, status, attempts, next_attempt_at,
        lease_owner, lease_expires_at, created_at)
      SELECT 'whd_' || n, 'job_' || n, 'acc_' || (n % ${ACCOUNTS}), 'https://hooks.test/h', '{}', 'sent', '[]', NULL, NULL, NULL, ${T0}
      FROM g`
    yield* sql`SET session_replication_role = DEFAULT`
    yield* sql`ANALYZE genjobs_webhook_deliveries`
    yield* sql`ALTER TABLE genjobs_webhook_deliveries SET (autovacuum_enabled = false)`
    yield* sql`UPDATE genjobs_webhook_deliveries SET status = 'pending', next_attempt_at = ${T0} + substr(id, 5)::int,
      lease_owner = CASE WHEN substr(id, 5)::int < ${3 * ACCOUNTS} THEN 'd' END,
      lease_expires_at = CASE WHEN substr(id, 5)::int < ${3 * ACCOUNTS} THEN ${T0 + 10 * BACKLOG}::bigint END`
  }))

  describe("postgres: a webhook claim beside eight accounts' 4,000 due deliveries, analyzed while sent", () => {
    it.each(["first", "settled"] as const)("walks the accounts by index and leases and records each delivery by key (%s plans)", (run) =>
      drainRuntime.runPromise(Effect.gen(function*() {
        const claim = Effect.flatMap(WebhookDeliveryRepo, (deliveries) =>
          deliveries.claimDue({ workerId: "w", now: T0 + BACKLOG, leaseMs: 30_000, maxPerAccount: 4, limit: 4 }))
        let claimed: ReadonlyArray<WebhookDelivery> = []
        const sent = yield* sentStatements(Effect.map(claim, (all) => (claimed = all)))
        // Each account's fourth delivery (its first free one), the first four accounts'.
        expect(claimed.map((d) => d.id)).toEqual([24, 25, 26, 27].map((n) => `whd_${n}`))
        // An outcome goes through the repo's write batcher, whose writer fiber is forked where the
        // repo is made: a repo made inside the capture sends it there.
        const recorded = yield* sentStatements(Effect.scoped(Effect.flatMap(Effect.provide(makeSqlWebhooks, layerSqlTables()), (deliveries) =>
          deliveries.recordAttempt("whd_24", "w", { attempt: 1, at: T0 + BACKLOG, statusCode: 500, error: "HTTP 500", durationMs: 1, responseBody: "" }, {
            status: "pending",
            nextAttemptAt: T0 + BACKLOG + 1_000
          }))))
        // A retry for later waits outside what claims walk until a claim finds it due (migration 0027).
        const [marked] = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql<{ readonly retry_waiting: unknown }>`SELECT retry_waiting FROM genjobs_webhook_deliveries WHERE id = 'whd_24'`)
        expect(Number(marked?.retry_waiting)).toBe(1)
        // The leases and the outcome given back, after the claim and after the plans' EXECUTEs.
        const reset = Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`UPDATE genjobs_webhook_deliveries SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL, attempts = '[]',
            retry_waiting = 0, next_attempt_at = ${T0} + substr(id, 5)::int WHERE lease_owner = 'w' OR id = 'whd_24'`)
        yield* reset
        const claimReads = readsOf(sent)
        expect(claimReads.map(({ kind }) => kind), sent.map(([text]) => text).join("\n")).toEqual(run === "first" ? ["head", "walk"] : ["walk"])
        for (const { kind, statement } of claimReads) {
          const plan = yield* planOf(statement, run)
          const where = `${run} plan of ${statement[0]}:\n${render(plan)}`
          expect(reads(plan).filter((r) => r.startsWith("Seq Scan")), where).toEqual([])
          if (kind === "head") {
            // The first due deliveries read in the claim's order under its limit, none sorted; the
            // leases from their own index. With the status in those indexes (0002's and 0023's)
            // these statistics read every pending delivery for each (migration 0024).
            expect([...new Set(nodes(plan).flatMap((n) => n["Index Name"] ?? []))].sort(), where).toEqual([
              "genjobs_webhook_deliveries_due_at",
              "genjobs_webhook_deliveries_lease_at",
              "genjobs_webhook_deliveries_pkey"
            ])
            const limitOverDue = nodes(plan).some((n) =>
              n["Node Type"] === "Limit" && (n.Plans ?? []).some((child) => child["Index Name"] === "genjobs_webhook_deliveries_due_at")
            )
            expect(limitOverDue, where).toBe(true)
          } else {
            // The walk's lease finds each delivery it picked by its key (an index scan, or a bitmap
            // of one), never by a scan of the table hashed against the picks.
            const leaseReads = nodes(plan).filter((n) => n.Alias === "w" && n["Node Type"] !== "ModifyTable")
            expect(leaseReads.map((n) => nodes(n).flatMap((m) => m["Index Name"] ?? []).join() || n["Node Type"]), where)
              .toEqual(["genjobs_webhook_deliveries_pkey"])
            // Its key's range is the list of picks itself, not each pick joined in turn: joined, other
            // statistics hashed the picks against a scan of every delivery (adapters/sql/SqlWebhooks.ts).
            expect(leaseReads.flatMap((n) => nodes(n).flatMap((m) => m["Index Cond"] ?? [])), where).toEqual([expect.stringContaining("ANY")])
          }
        }
        // The outcome's write, a batch of them from a record set, reads the table through its
        // primary key and no other index.
        const writes = recorded.filter(([text]) => text.startsWith("WITH d AS"))
        expect(writes.length, recorded.map(([text]) => text).join("\n")).toBe(1)
        const plan = yield* planOf(writes[0]!, run)
        const where = `${run} plan of ${writes[0]![0]}:\n${render(plan)}`
        expect(reads(plan).filter((r) => r.startsWith("Seq Scan")), where).toEqual([])
        expect(nodes(plan).flatMap((n) => n["Index Name"] ?? []), where).toEqual(["genjobs_webhook_deliveries_pkey"])
        yield* reset
      })))
  })
}

/**
 * Which reads a claim starts with. A repo's first claim reads the first due deliveries; when they
 * do not decide it, it walks account by account, and after a walk through at most 64 accounts
 * (the head's size) the next claim walks at once. A walk through more sends the next claim to the
 * first due deliveries again: reading every waiting account costs more than the head then.
 */
const walkSwitch = (unchecked: (seed: Effect.Effect<void, unknown>) => Effect.Effect<void, unknown>) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const deliveries = yield* WebhookDeliveryRepo
  const many = 70
  const insertDeliveries = (account: (n: string) => Statement.Fragment, count: number, from: number, leased: number, due: (n: string) => Statement.Fragment) =>
    sql`WITH RECURSIVE g(n) AS (SELECT ${from} UNION ALL SELECT n + 1 FROM g WHERE n < ${from + count - 1})
      INSERT INTO genjobs_webhook_deliveries (id, job_id, account_id, url, payload, status, attempts, next_attempt_at,
        lease_owner, lease_expires_at, created_at)
      SELECT 'whd_' || n, 'job_' || n, ${account("n")}, 'https://hooks.test/h', '{}', 'pending', '[]', ${due("n")},
        CASE WHEN n < ${from + leased} THEN 'd' END, CASE WHEN n < ${from + leased} THEN ${T0 + 1_000_000} END, ${T0}
      FROM g`
  yield* insertAccounts(sql, ["acc_busy", ...Array.from({ length: many }, (_, i) => `acc_later_${i}`)])
  // One account's 70 due deliveries, 3 of them in flight: more than the head, all one account's.
  yield* unchecked(Effect.asVoid(insertDeliveries(() => sql`'acc_busy'`, many, 0, 3, (n) => sql`${sql.literal(String(T0))} + ${sql.literal(n)}`)))
  const claimReads = Effect.map(
    sentStatements(deliveries.claimDue({ workerId: "w", now: T0 + 1_000, leaseMs: 30_000, maxPerAccount: 4, limit: 4 })),
    (sent) => readsOf(sent).map(({ kind }) => kind)
  )
  expect(yield* claimReads).toEqual(["head", "walk"])
  expect(yield* claimReads).toEqual(["walk"])
  // 70 more accounts wait, each with a delivery due later: the next walk goes through 71.
  yield* unchecked(Effect.asVoid(insertDeliveries((n) => sql`'acc_later_' || (${sql.literal(n)} - ${many})`, many, many, 0, () => sql`${T0 + 500_000}`)))
  expect(yield* claimReads).toEqual(["walk"])
  expect(yield* claimReads).toEqual(["head", "walk"])
})

describe("webhook claims: the head first, or the walk at once", () => {
  const sqliteRuntime = sqlitePlanRuntime("webhook-claim-walk")
  it("sqlite: walks at once after a walk through few accounts, reads the head again after one through many", () =>
    sqliteRuntime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => Effect.andThen(sql`PRAGMA foreign_keys = OFF`, walkSwitch((seed) => seed)))))
  if (pgUp) {
    const pgRuntime = planRuntime(Effect.void)
    it("postgres: walks at once after a walk through few accounts, reads the head again after one through many", () =>
      pgRuntime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        walkSwitch((seed) => sql.withTransaction(Effect.andThen(sql`SET LOCAL session_replication_role = replica`, seed))))))
  } else {
    it.skip("postgres: walks at once after a walk through few accounts (server not reachable)", () => undefined)
  }
})

/**
 * Accounts whose one pending delivery is a retry waiting to fall due (receivers that are down,
 * migration 0027): a claim walks none of them, so a walk through one busy account stays one
 * through few, and the next claim walks at once. Once their retries fall due, a claim makes them
 * walkable first, from their own index: the walk then goes through all 71 accounts and the next
 * claim reads the head again. Returns the statements that made them walkable.
 */
/** A delivery's attempts after its receiver answered 500 once. */
const FAILED_ONCE = JSON.stringify([{ attempt: 1, at: T0, statusCode: 500, error: "HTTP 500", durationMs: 1, responseBody: "" }])

const waitingRetries = (unchecked: (seed: Effect.Effect<void, unknown>) => Effect.Effect<void, unknown>) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const deliveries = yield* WebhookDeliveryRepo
  const many = 70
  yield* insertAccounts(sql, ["acc_busy", ...Array.from({ length: many }, (_, i) => `acc_down_${i}`)])
  // One account's 70 due deliveries, 3 of them in flight; 70 accounts each with a retry due at T0 + 500,000.
  yield* unchecked(Effect.asVoid(sql`WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < ${2 * many - 1})
      INSERT INTO genjobs_webhook_deliveries (id, job_id, account_id, url, payload, status, attempts, next_attempt_at,
        retry_waiting, lease_owner, lease_expires_at, created_at)
      SELECT 'whd_' || n, 'job_' || n, CASE WHEN n < ${many} THEN 'acc_busy' ELSE 'acc_down_' || (n - ${many}) END, 'https://hooks.test/h', '{}',
        'pending', CASE WHEN n < ${many} THEN '[]' ELSE ${FAILED_ONCE} END, CASE WHEN n < ${many} THEN ${T0} + n ELSE ${T0 + 500_000} END,
        CASE WHEN n < ${many} THEN 0 ELSE 1 END, CASE WHEN n < 3 THEN 'd' END, CASE WHEN n < 3 THEN ${T0 + 1_000_000} END, ${T0}
      FROM g`))
  const claimAt = (now: number) =>
    Effect.map(
      sentStatements(deliveries.claimDue({ workerId: "w", now, leaseMs: 30_000, maxPerAccount: 4, limit: 4 })),
      (sent) => ({ reads: readsOf(sent).map(({ kind }) => kind), made: sent.filter(([text]) => !text.startsWith("WITH")) })
    )
  expect((yield* claimAt(T0 + 1_000)).reads).toEqual(["head", "walk"])
  expect((yield* claimAt(T0 + 1_000)).reads).toEqual(["walk"])
  expect((yield* claimAt(T0 + 2_000)).reads).toEqual(["walk"])
  const due = yield* claimAt(T0 + 500_000)
  expect(due.reads).toEqual(["walk"])
  const [waiting] = yield* sql<{ readonly n: unknown }>`SELECT COUNT(*) AS n FROM genjobs_webhook_deliveries WHERE retry_waiting = 1`
  expect(Number(waiting?.n)).toBe(0)
  expect((yield* claimAt(T0 + 500_000)).reads).toEqual(["head", "walk"])
  return due.made.filter(([text]) => /retry_waiting = 1/.test(text))
})

describe("webhook claims beside accounts whose retries wait", () => {
  const sqliteRuntime = sqlitePlanRuntime("webhook-claim-waiting")
  it("sqlite: walks none of them until their retries fall due, then makes those walkable", () =>
    sqliteRuntime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.andThen(sql`PRAGMA foreign_keys = OFF`, Effect.asVoid(waitingRetries((seed) => seed))))))
  if (pgUp) {
    const pgRuntime = planRuntime(Effect.void)
    it("postgres: walks none of them until their retries fall due, then makes those walkable from their own index", () =>
      pgRuntime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.gen(function*() {
          // The deliveries' jobs are not there, and a claim's lease checks a row's keys again when
          // its own transaction made the row walkable: this database keeps no such key.
          yield* sql`ALTER TABLE genjobs_webhook_deliveries DROP CONSTRAINT genjobs_webhook_deliveries_job_id_fkey`
          const made = yield* waitingRetries((seed) => sql.withTransaction(Effect.andThen(sql`SET LOCAL session_replication_role = replica`, seed)))
          // The retries made walkable and the next one's due time: the waiting ones' index, and the key.
          expect(made.length).toBe(2)
          for (const run of ["first", "settled"] as const) {
            for (const statement of made) {
              const plan = yield* planOf(statement, run)
              const where = `${run} plan of ${statement[0]}:\n${render(plan)}`
              const read = nodes(plan).filter((n) => n["Relation Name"] === "genjobs_webhook_deliveries" && n["Node Type"] !== "ModifyTable")
              expect(read.filter((n) => n["Node Type"] === "Seq Scan"), where).toEqual([])
              expect([...new Set(read.flatMap((n) => nodes(n).flatMap((m) => m["Index Name"] ?? [])))].sort(), where)
                .toEqual(statement[0].startsWith("UPDATE")
                  ? ["genjobs_webhook_deliveries_pkey", "genjobs_webhook_deliveries_waiting"]
                  : ["genjobs_webhook_deliveries_waiting"])
            }
          }
        }))))
  } else {
    it.skip("postgres: walks none of them until their retries fall due (server not reachable)", () => undefined)
  }
})
