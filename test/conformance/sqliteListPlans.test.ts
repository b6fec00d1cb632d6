import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import type { AccountId } from "../../src/domain/ids.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { AuditLog } from "../../src/ports/AuditLog.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { T0 } from "./fixtures.js"
import { sentStatement } from "./sentStatement.js"

/**
 * SQLite reads each list's page as a search of the index made for its filter, from the cursor
 * (the row value is a range of that index: `(created_at,id)<(?,?)` in the plan), with no
 * temporary B-tree to sort. The tables are left empty: without statistics SQLite plans as for
 * large tables, so a scan and a sort are its alternative.
 */

const file = join(mkdtempSync(join(tmpdir(), "genjobs-plans-")), "plans.db")
const ACCOUNT = "acc_1" as AccountId
const after = { createdAt: T0, id: "x" }

/** The store, and a second connection to the same file to explain its statements on. */
const stores = Layer.merge(layerSqlite({ filename: file }), SqliteClient.layer({ filename: file }))

/** The page `run` reads is a search of `index` (default prefix left out) whose range takes `range`, sorting nothing. */
const expectSearch = <E, R>(run: Effect.Effect<unknown, E, R>, index: string, range: string) =>
  Effect.gen(function*() {
    const [text, params] = yield* sentStatement(run)
    const sql = yield* SqlClient.SqlClient
    const plan = (yield* sql.unsafe<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)).map((row) => row.detail)
    const where = `${text}\n${plan.join("\n")}`
    expect(plan, where).toHaveLength(1)
    expect(plan[0], where).toMatch(new RegExp(`^SEARCH \\S+ USING INDEX genjobs_${index} \\(`))
    expect(plan[0], where).toContain(range)
  })

// A runtime of the file's own, not @effect/vitest's `layer`: that one assigns its runtime to the
// shared \`it\`, which later files of the same worker (isolate: false) would then run under.
const runtime = ManagedRuntime.make(stores)
afterAll(() => runtime.dispose())

describe("sqlite: each list's page is a search of its index from the cursor", () => {
  it("an account's jobs with each filter, the admin's jobs, deliveries, audit log, accounts and ledger", () =>
    runtime.runPromise(Effect.gen(function*() {
      const jobs = yield* JobRepo
      const reads = yield* AdminReadRepo
      const deliveries = yield* WebhookDeliveryRepo
      const audit = yield* AuditLog
      const older = "(created_at,id)<(?,?)"
      const page = { limit: 20, after } as const
      yield* expectSearch(jobs.list({ ...page, accountId: ACCOUNT }), "jobs_account_list", `account_id=? AND ${older}`)
      yield* expectSearch(jobs.list({ ...page, accountId: ACCOUNT, status: "failed" }), "jobs_account_status_list", `status=? AND ${older}`)
      yield* expectSearch(jobs.list({ ...page, accountId: ACCOUNT, model: "m/a" }), "jobs_account_model_list", `model=? AND ${older}`)
      yield* expectSearch(reads.jobs(page), "jobs_list", older)
      yield* expectSearch(reads.jobs({ ...page, status: "failed" }), "jobs_status_list", `status=? AND ${older}`)
      yield* expectSearch(reads.jobs({ ...page, model: "m/a" }), "jobs_model_list", `model=? AND ${older}`)
      yield* expectSearch(deliveries.list({ ...page, accountId: ACCOUNT }), "webhook_deliveries_account", `account_id=? AND ${older}`)
      yield* expectSearch(
        deliveries.list({ ...page, accountId: ACCOUNT, status: "failed" }),
        "webhook_deliveries_account_status",
        `status=? AND ${older}`
      )
      yield* expectSearch(reads.deliveries(page), "webhook_deliveries_list", older)
      yield* expectSearch(reads.deliveries({ ...page, status: "failed" }), "webhook_deliveries_status", `status=? AND ${older}`)
      yield* expectSearch(audit.list(page), "admin_audit_list", older)
      yield* expectSearch(audit.list({ ...page, actor: "alice" }), "admin_audit_actor", `actor=? AND ${older}`)
      yield* expectSearch(audit.list({ ...page, action: "key.create" }), "admin_audit_action", `action=? AND ${older}`)
      yield* expectSearch(audit.list({ ...page, target: "acc_1" }), "admin_audit_target", `target=? AND ${older}`)
      yield* expectSearch(reads.accounts(page), "accounts_list", older)
      yield* expectSearch(reads.ledger({ ...page, accountId: ACCOUNT }), "ledger_account_list", "account_id=? AND (created_at,id)>(?,?)")
    })))
})
