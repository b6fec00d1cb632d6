import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { JobCursor } from "../../src/domain/cursor.js"
import type { AccountId } from "../../src/domain/ids.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { AuditLog } from "../../src/ports/AuditLog.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { postgresAvailable } from "../support/postgres.js"
import { T0 } from "./fixtures.js"
import { nodes, planOf, planRuntime, render } from "./pgPlans.js"
import { sentStatement } from "./sentStatement.js"

/**
 * Every list's page on PostgreSQL is a range read of the index made for its filter, starting at
 * the cursor: the plan's scan is that index with the cursor's row comparison in its Index Cond,
 * and nothing sorts (but two filters at once, see `Expected.pair`) or reads the whole table. Checked on the statement the store really sends
 * (caught on its way out), as a prepared statement plans it at first and once settled (see
 * planOf), over enough rows, ANALYZEd, that a sequential scan and a sort are the planner's real
 * alternative.
 */

const pgUp = await postgresAvailable()

const ACCOUNTS = 2_000
const JOBS = 80_000
const ROWS = 20_000
const MIDDLE: JobCursor = { createdAt: T0 + JOBS / 2, id: "job_m" }

/** Account i of the seeded ones. */
const accountId = (i: number) => `acc_${String(i).padStart(5, "0")}` as AccountId
const PAGED = accountId(1)

/**
 * Rows in created_at order, four to each, as a table that only grows lies on disk. The paged
 * account holds a quarter of the jobs, deliveries and ledger entries (forty others the rest);
 * filters select a few in a hundred: failed jobs and deliveries 2 %, model "m/rare" 4 % (the
 * failed jobs among them), each audit actor, action and target 1 to 2 %.
 */
const seed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const account = sql.literal(`CASE WHEN g % 4 = 0 THEN '${PAGED}' ELSE 'acc_' || lpad((g % 40 + 2)::text, 5, '0') END`)
  yield* sql`INSERT INTO genjobs_accounts (id, name, balance_micro_cents, max_concurrent_jobs, segments, allowed_models,
      discounts, webhook_secret, created_at)
    SELECT 'acc_' || lpad(g::text, 5, '0'), 'account ' || g, 0, 10, '[]', '[]', '[]', 'whsec_x', ${T0}::bigint + g
    FROM generate_series(0, ${ACCOUNTS - 1}) g`
  yield* sql`INSERT INTO genjobs_jobs (id, account_id, request_id, model, version, input, status, cost_micro_cents,
      created_at, estimated_completion_at, attempts)
    SELECT 'job_' || lpad(g::text, 6, '0'), ${account}, 'req_' || g,
      CASE WHEN g % 25 = 0 THEN 'm/rare' ELSE 'm/' || (g / 7 % 4) END, 'v1', '{}',
      CASE WHEN g % 50 = 0 THEN 'failed' WHEN g % 50 = 1 THEN 'pending' WHEN g % 50 = 3 THEN 'cancelled' ELSE 'completed' END,
      1000, ${T0}::bigint + g / 4, ${T0}::bigint + g, 0
    FROM generate_series(0, ${JOBS - 1}) g`
  yield* sql`INSERT INTO genjobs_webhook_deliveries (id, job_id, account_id, url, payload, status, attempts, created_at)
    SELECT 'dlv_' || lpad(g::text, 6, '0'), 'job_' || lpad(g::text, 6, '0'), ${account}, 'http://127.0.0.1/hook', '{}',
      CASE WHEN g % 50 = 0 THEN 'failed' WHEN g % 50 = 1 THEN 'pending' ELSE 'sent' END, '[]', ${T0}::bigint + g / 4
    FROM generate_series(0, ${ROWS - 1}) g`
  yield* sql`INSERT INTO genjobs_admin_audit (id, actor, action, target, summary, request_id, created_at)
    SELECT 'aud_' || lpad(g::text, 6, '0'), 'actor' || (g % 50), CASE WHEN g % 50 = 0 THEN 'key.create' ELSE 'other.' || (g % 50) END,
      'acc_' || lpad((g % 100)::text, 5, '0'), '{}', 'req_' || g, ${T0}::bigint + g / 4
    FROM generate_series(0, ${ROWS - 1}) g`
  yield* sql`INSERT INTO genjobs_ledger (id, account_id, job_id, kind, amount_micro_cents, created_at)
    SELECT 'led_' || lpad(g::text, 6, '0'), ${account}, NULL, 'credit', 1, ${T0}::bigint + g / 4
    FROM generate_series(0, ${ROWS - 1}) g`
  yield* sql`ANALYZE`
})

interface Expected {
  /** The index the page may start from (default prefix left out). */
  readonly indexes: ReadonlyArray<string>
  /** The cursor's comparison: newest first reads below it, oldest first above. */
  readonly cursor?: "<" | ">"
  /** Conditions besides the cursor that the index must take (the filters it is made for). */
  readonly conditions?: ReadonlyArray<string>
  /**
   * Two filters with no index of their own: one filter's index reads from the cursor and the
   * other is checked on each row, or, when the planner expects the pair to be rare, the pair's
   * rows beyond the cursor are read (a bitmap) and sorted.
   */
  readonly pair?: boolean
}

/**
 * The page `run` reads starts from a range of one of the expected indexes at the cursor (its
 * row comparison in the Index Cond, beside the filters' conditions), reads no table through, and
 * sorts nothing.
 */
const expectRangeRead = <E, R>(run: Effect.Effect<unknown, E, R>, expected: Expected) =>
  Effect.gen(function*() {
    const statement = yield* sentStatement(run)
    for (const when of ["first", "settled"] as const) {
      const plan = yield* planOf(statement, when)
      const types = nodes(plan).map((n) => n["Node Type"])
      const scans = nodes(plan).filter((n) => n["Index Name"] !== undefined)
      const where = `${when} plan of ${statement[0]}:\n${render(plan)}`
      expect(types, where).not.toContain("Seq Scan")
      expect(scans, where).toHaveLength(1)
      expect(expected.indexes.map((i) => `genjobs_${i}`), where).toContain(scans[0]!["Index Name"])
      expect(scans[0]!["Index Cond"] ?? "", where).toContain(`(ROW(created_at, id) ${expected.cursor ?? "<"} ROW(`)
      for (const condition of expected.conditions ?? []) expect(scans[0]!["Index Cond"] ?? "", where).toContain(condition)
      if (expected.pair !== true) {
        expect(["Index Scan", "Index Only Scan"], where).toContain(scans[0]!["Node Type"])
        expect(types, where).not.toContain("Sort")
        expect(types, where).not.toContain("Incremental Sort")
      }
    }
  })

if (!pgUp) {
  describe.skip("postgres: list plans (server not reachable)", () => {
    it("reads each page from an index range", () => undefined)
  })
} else {
  // One database for the file, seeded once: the plans only read it.
  const runtime = planRuntime(seed)

  describe("postgres: each list's page is an index range read from its cursor", () => {
    // An account with a quarter of the rows may be read from the index of all rows, newest
    // first, checking the account on each: still from the cursor on, a few rows for each shown.
    it("an account's jobs, with each filter of GET /v1/jobs", () =>
      runtime.runPromise(Effect.gen(function*() {
        const repo = yield* JobRepo
        const page = { accountId: PAGED, limit: 20, after: MIDDLE } as const
        yield* expectRangeRead(repo.list(page), { indexes: ["jobs_account_list", "jobs_list"] })
        yield* expectRangeRead(repo.list({ ...page, status: "failed" }), {
          indexes: ["jobs_account_status_list"],
          conditions: ["account_id =", "status ="]
        })
        yield* expectRangeRead(repo.list({ ...page, model: "m/rare" }), {
          indexes: ["jobs_account_model_list"],
          conditions: ["account_id =", "model ="]
        })
        yield* expectRangeRead(repo.list({ ...page, status: "failed", model: "m/rare" }), {
          indexes: ["jobs_account_status_list", "jobs_account_model_list"],
          pair: true
        })
      })))

    it("the admin's jobs, across accounts or of one, with each filter", () =>
      runtime.runPromise(Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const page = { limit: 50, after: MIDDLE } as const
        yield* expectRangeRead(reads.jobs(page), { indexes: ["jobs_list"] })
        yield* expectRangeRead(reads.jobs({ ...page, status: "failed" }), { indexes: ["jobs_status_list"], conditions: ["status ="] })
        yield* expectRangeRead(reads.jobs({ ...page, model: "m/rare" }), { indexes: ["jobs_model_list"], conditions: ["model ="] })
        yield* expectRangeRead(reads.jobs({ ...page, accountId: PAGED }), { indexes: ["jobs_account_list", "jobs_list"] })
        yield* expectRangeRead(reads.jobs({ ...page, accountId: PAGED, status: "failed" }), {
          indexes: ["jobs_account_status_list"],
          conditions: ["account_id =", "status ="]
        })
        yield* expectRangeRead(reads.jobs({ ...page, accountId: PAGED, model: "m/rare" }), {
          indexes: ["jobs_account_model_list"],
          conditions: ["account_id =", "model ="]
        })
        yield* expectRangeRead(reads.jobs({ ...page, createdFrom: T0 + 1_000, createdBefore: T0 + JOBS }), {
          indexes: ["jobs_list"],
          conditions: ["created_at >=", "created_at <"]
        })
      })))

    it("webhook deliveries: an account's, with each filter, and the admin's", () =>
      runtime.runPromise(Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        const reads = yield* AdminReadRepo
        const page = { limit: 20, after: { createdAt: T0 + ROWS / 8, id: "dlv_m" } } as const
        const ofAccount = { indexes: ["webhook_deliveries_account", "webhook_deliveries_list"] }
        const failedOfAccount = { indexes: ["webhook_deliveries_account_status"], conditions: ["account_id =", "status ="] }
        yield* expectRangeRead(deliveries.list({ ...page, accountId: PAGED }), ofAccount)
        yield* expectRangeRead(deliveries.list({ ...page, accountId: PAGED, status: "failed" }), failedOfAccount)
        yield* expectRangeRead(reads.deliveries(page), { indexes: ["webhook_deliveries_list"] })
        yield* expectRangeRead(reads.deliveries({ ...page, status: "failed" }), {
          indexes: ["webhook_deliveries_status"],
          conditions: ["status ="]
        })
        yield* expectRangeRead(reads.deliveries({ ...page, accountId: PAGED }), ofAccount)
        yield* expectRangeRead(reads.deliveries({ ...page, accountId: PAGED, status: "failed" }), failedOfAccount)
      })))

    it("the audit log, with each filter", () =>
      runtime.runPromise(Effect.gen(function*() {
        const audit = yield* AuditLog
        const page = { limit: 20, after: { createdAt: T0 + ROWS / 8, id: "aud_m" } } as const
        yield* expectRangeRead(audit.list(page), { indexes: ["admin_audit_list"] })
        yield* expectRangeRead(audit.list({ ...page, actor: "actor7" }), { indexes: ["admin_audit_actor"], conditions: ["actor ="] })
        yield* expectRangeRead(audit.list({ ...page, action: "key.create" }), { indexes: ["admin_audit_action"], conditions: ["action ="] })
        yield* expectRangeRead(audit.list({ ...page, target: accountId(7) }), { indexes: ["admin_audit_target"], conditions: ["target ="] })
      })))

    it("the admin's accounts, and an account's ledger (oldest first)", () =>
      runtime.runPromise(Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        yield* expectRangeRead(reads.accounts({ limit: 20, after: { createdAt: T0 + ACCOUNTS / 2, id: "acc_m" } }), {
          indexes: ["accounts_list"]
        })
        yield* expectRangeRead(reads.ledger({ accountId: PAGED, limit: 20, after: { createdAt: T0 + ROWS / 8, id: "led_m" } }), {
          indexes: ["ledger_account_list"],
          cursor: ">",
          conditions: ["account_id ="]
        })
      })))
  })
}
