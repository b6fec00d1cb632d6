import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import type { AccountId } from "../../src/domain/ids.js"
import type { AnyRefusal } from "../../src/domain/refusal.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { UploadRepo } from "../../src/ports/UploadRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { createReleaseSchema } from "../support/unprefixedRelease.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"
import { hostMigrate, hostRows } from "./hostApp.js"
import { release, seedRelease } from "./releaseData.js"
import { namedObject, schemaNames, tableNames } from "./schema.js"
import type { Stores } from "./storeSuite.js"

/** One fresh, empty database: a plain client on it, and the engine's stores on it. */
export interface TestDatabase {
  readonly client: Layer.Layer<SqlClient.SqlClient, unknown>
  readonly engine: (tablePrefix?: string) => Layer.Layer<Stores, unknown>
}

const migrationRows = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ migration_id: number; name: string }>`SELECT migration_id, name FROM ${sql(table)} ORDER BY migration_id`).pipe(
      Effect.map((rows) => rows.map((row) => [Number(row.migration_id), row.name]))
    )

const ENGINE_MIGRATIONS = [[1, "initial"], [2, "webhook_deliveries"], [3, "uploads"], [4, "upload_verification"], [5, "queue"], [6, "retention"], [7, "provider_handles"], [8, "admin"], [9, "provider_limits"], [10, "active_jobs"], [11, "auth_failures"], [12, "budgets_and_spend"], [13, "provider_route"], [14, "list_indexes"], [15, "change_signals"], [16, "submit_gate"], [17, "fair_shares"], [18, "job_logs"], [19, "changes"], [20, "standard_webhooks"], [21, "submit_counts_itself"], [22, "processing_version"], [23, "webhook_claims"], [24, "webhook_claim_keys"], [25, "spend_daily"], [26, "lease_order"], [27, "webhook_retries_waiting"]]

const balanceIsLedger = (id: AccountId) =>
  Effect.gen(function*() {
    const accounts = yield* AccountRepo
    const balance = Option.getOrThrow(yield* accounts.get(id)).balanceMicroCents
    const entries = yield* accounts.ledger(id)
    expect(entries.reduce((sum, e) => sum + e.amountMicroCents, 0)).toBe(balance)
    return balance
  })

export const runUpgradeSuite = (name: string, newDatabase: () => Promise<TestDatabase>) => {
  const onClient = <A, E>(db: TestDatabase, effect: Effect.Effect<A, E, SqlClient.SqlClient>) => Effect.provide(effect, db.client)
  /** Starts the engine's stores (migrations included) and runs `body` with them and a plain client. */
  const onEngine = <A, E>(db: TestDatabase, body: Effect.Effect<A, E, Stores | SqlClient.SqlClient>, tablePrefix?: string) =>
    Effect.provide(body, Layer.merge(db.engine(tablePrefix), db.client))
  const releaseDatabase = (upTo = 4) =>
    Effect.gen(function*() {
      const db = yield* Effect.promise(newDatabase)
      yield* onClient(db, Effect.andThen(createReleaseSchema(upTo), seedRelease(upTo)))
      return db
    })
  const freshSchema = Effect.gen(function*() {
    const fresh = yield* Effect.promise(newDatabase)
    return yield* onEngine(fresh, schemaNames)
  })

  describe(`${name}: upgrading a database of the unprefixed release`, () => {
    it.live("moves every row to the prefixed tables, where the stores read it all", () =>
      Effect.gen(function*() {
        const db = yield* releaseDatabase()
        yield* onEngine(db, Effect.gen(function*() {
          const accounts = yield* AccountRepo
          expect(Option.getOrThrow(yield* accounts.get(release.alice.id))).toEqual(release.alice)
          expect(Option.getOrThrow(yield* accounts.get(release.bob.id))).toEqual(release.bob)
          expect(yield* accounts.count).toBe(2)
          expect(yield* accounts.ledger(release.alice.id)).toEqual(release.ledger.alice)
          expect(yield* accounts.ledger(release.bob.id)).toEqual(release.ledger.bob)
          expect(yield* balanceIsLedger(release.alice.id)).toBe(7_000)

          const keys = yield* ApiKeyRepo
          for (const key of release.keys) expect(Option.getOrThrow(yield* keys.findByHash(key.hash))).toEqual(key)

          const catalog = yield* CatalogRepo
          expect(yield* catalog.load).toEqual(release.catalog)
          expect(yield* catalog.revision).toBe(3)

          const jobs = yield* JobRepo
          const { completed, failed, pending, processing } = release.jobs
          for (const j of [pending, processing, completed, failed]) expect(Option.getOrThrow(yield* jobs.get(j.id))).toEqual(j)
          // Pages of two (the repo answers one more, to tell a next page exists).
          expect(yield* jobs.list({ accountId: release.alice.id, limit: 2 })).toEqual([pending, processing, completed])
          expect(yield* jobs.list({ accountId: release.alice.id, limit: 2, after: { createdAt: processing.createdAt, id: processing.id } })).toEqual([completed, failed])
          expect(yield* jobs.list({ accountId: release.alice.id, limit: 10, status: "failed" })).toEqual([failed])

          const deliveries = yield* WebhookDeliveryRepo
          expect(yield* deliveries.list({ accountId: release.alice.id, limit: 10 })).toEqual(release.deliveries)
          expect(yield* deliveries.forJob(completed.id)).toEqual([release.deliveries[0]])
          expect(Option.getOrThrow(yield* deliveries.retry(release.deliveries[1]!.id, T0 + 9_000)).status).toBe("pending")

          const uploads = yield* UploadRepo
          for (const u of release.uploads) expect(Option.getOrThrow(yield* uploads.get(u.id))).toEqual(u)

          // effect_sql_migrations held only the engine's rows, so it is gone.
          // PostgreSQL keeps ended jobs apart from their accounts' active counts (migration 0010).
          expect((yield* tableNames).sort()).toEqual([
            "genjobs_accounts", ...(name === "postgres" ? ["genjobs_active_job_ends"] : []), "genjobs_admin_audit", "genjobs_api_keys", "genjobs_auth_failures", "genjobs_catalog", "genjobs_idempotency_keys", "genjobs_job_changes", "genjobs_job_logs", "genjobs_jobs", "genjobs_leases",
            "genjobs_ledger", "genjobs_migrations", "genjobs_provider_starts", "genjobs_rate_windows", "genjobs_spend_daily", "genjobs_spend_hourly", "genjobs_uploads",
            "genjobs_webhook_deliveries"
          ])
          expect(yield* migrationRows("genjobs_migrations")).toEqual(ENGINE_MIGRATIONS)
        }))
      }))

    it.live("keeps working after the move: submit, replay, claim, complete, foreign keys", () =>
      Effect.gen(function*() {
        const db = yield* releaseDatabase()
        yield* onEngine(db, Effect.gen(function*() {
          const jobs = yield* JobRepo
          const { alice } = release
          const submit = (j: ReturnType<typeof job>) =>
            jobs.submit({
              job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS,
              idempotency: { key: release.idempotency.key, requestHash: release.idempotency.requestHash, notBefore: T0 }
            })
          // The release's idempotency record still answers with its job.
          expect(yield* submit(job(alice.id, { createdAt: T0 + 5_000 }))).toEqual({ _tag: "Replayed", job: release.jobs.pending })
          // The release's pending and processing jobs count against the maximum from the start (migration 0010).
          const fresh = job(alice.id, { createdAt: T0 + 6_000 })
          const refused = yield* Effect.result(jobs.submit({ job: fresh, maxConcurrentJobs: 2, rateLimits: NO_LIMITS }))
          expect(Result.isFailure(refused) && (refused.failure as AnyRefusal).code).toBe("CONCURRENT_JOBS_EXCEEDED")
          expect((yield* jobs.submit({ job: fresh, maxConcurrentJobs: 3, rateLimits: NO_LIMITS }))._tag).toBe("Created")

          // The oldest runnable job is the release's pending one; the leased one stays with its worker.
          const claimed = Option.getOrThrow(yield* jobs.claim({ workerId: "w-new", now: T0 + 10_000, leaseMs: 60_000, maxAttempts: 3 }))
          expect(claimed.id).toBe(release.jobs.pending.id)
          const done = Option.getOrThrow(yield* jobs.complete(claimed.id, "w-new", [{ url: "https://files.example/a.txt", type: "text" }], T0 + 11_000))
          expect(done.status).toBe("completed")
          expect((yield* (yield* WebhookDeliveryRepo).forJob(claimed.id)).map((d) => d.status)).toEqual(["pending"])
          expect(yield* balanceIsLedger(alice.id)).toBe(6_000)
          // The rollups migration 0012 made from the release's ledger, and the charges since, sum to it.
          const [rolled] = yield* (yield* AdminReadRepo).spend({ accountId: alice.id, from: 0, to: T0 + 86_400_000, groupBy: ["account"] })
          const lines = yield* (yield* AccountRepo).ledger(alice.id)
          const sumOf = (kind: string) => lines.filter((e) => e.kind === kind).reduce((n, e) => n + Math.abs(e.amountMicroCents), 0)
          expect([rolled?.chargedMicroCents, rolled?.refundedMicroCents]).toEqual([sumOf("charge"), sumOf("refund")])
          // A total budget counts that spend: the daily totals migration 0025 made from those rollups.
          const spent = sumOf("charge") - sumOf("refund")
          const overBudget = yield* Effect.result(jobs.submit({
            job: job(alice.id, { createdAt: T0 + 12_000 }), maxConcurrentJobs: 100, rateLimits: NO_LIMITS,
            budgets: [{ scope: "account", budget: { limitMicroCents: spent + 999, period: "total" } }]
          }))
          expect(Result.isFailure(overBudget) && (overBudget.failure as AnyRefusal).details).toMatchObject({ spentMicroCents: spent })

          // Foreign keys point at the renamed tables: a key of a known account goes in, of an unknown one not.
          const sql = yield* SqlClient.SqlClient
          yield* sql.onDialectOrElse({ pg: () => Effect.void, orElse: () => sql`PRAGMA foreign_keys = ON` })
          const insertKey = (id: string, accountId: string) =>
            sql`INSERT INTO genjobs_api_keys ${
              sql.insert({
                id, account_id: accountId, name: "fk", scopes: "[]", allowed_ips: "[]", hash: id, hint: "h", active: 1,
                expires_at: null, created_at: T0
              })
            }`
          yield* insertKey("key_fk_known", alice.id)
          expect(Result.isFailure(yield* Effect.result(insertKey("key_fk_unknown", "acc_missing")))).toBe(true)
          expect(Result.isFailure(yield* Effect.result(sql`DELETE FROM genjobs_accounts WHERE id = ${alice.id}`))).toBe(true)
          yield* sql.onDialectOrElse({
            pg: () => Effect.void,
            orElse: () => Effect.map(sql`PRAGMA foreign_key_check`, (problems) => expect(problems).toEqual([]))
          })
        }))
      }))

    it.live("ends with the schema of a fresh install, every name prefixed; a second start changes nothing", () =>
      Effect.gen(function*() {
        const db = yield* releaseDatabase()
        const upgraded = yield* onEngine(db, schemaNames)
        expect(upgraded).toEqual(yield* freshSchema)
        expect(upgraded.map(namedObject).filter((n) => !n.startsWith("genjobs_"))).toEqual([])
        const again = yield* onEngine(
          db,
          Effect.all([schemaNames, migrationRows("genjobs_migrations"), Effect.flatMap(AccountRepo, (accounts) => accounts.count)])
        )
        expect(again).toEqual([upgraded, ENGINE_MIGRATIONS, 2])
      }))

    it.live("upgrades a release that applied only its first two migrations, then runs the rest", () =>
      Effect.gen(function*() {
        const db = yield* releaseDatabase(2)
        yield* onEngine(db, Effect.gen(function*() {
          expect(Option.getOrThrow(yield* (yield* AccountRepo).get(release.alice.id))).toEqual(release.alice)
          expect(Option.getOrThrow(yield* (yield* JobRepo).get(release.jobs.failed.id))).toEqual(release.jobs.failed)
          const uploads = yield* UploadRepo
          yield* uploads.create(release.uploads[0]!)
          expect(Option.getOrThrow(yield* uploads.get(release.uploads[0]!.id))).toEqual(release.uploads[0])
          expect(yield* migrationRows("genjobs_migrations")).toEqual(ENGINE_MIGRATIONS)
          expect(yield* schemaNames).toEqual(yield* freshSchema)
        }))
      }))

    it.live("upgrades to a custom prefix", () =>
      Effect.gen(function*() {
        const db = yield* releaseDatabase()
        yield* onEngine(db, Effect.gen(function*() {
          expect(Option.getOrThrow(yield* (yield* AccountRepo).get(release.alice.id))).toEqual(release.alice)
          expect((yield* schemaNames).map(namedObject).filter((n) => !n.startsWith("acme_"))).toEqual([])
          expect(yield* migrationRows("acme_migrations")).toEqual(ENGINE_MIGRATIONS)
        }), "acme_")
      }))
  })

  describe(`${name}: sharing a host application's database`, () => {
    /**
     * The host's own `accounts` and `jobs` (other columns, its data) and its own
     * `effect_sql_migrations`, written by its own Migrator. `names` are its migrations' names.
     */
    const hostDatabase = (names: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const db = yield* Effect.promise(newDatabase)
        const applied = yield* onClient(db, hostMigrate(names.slice(0, 5)))
        expect(applied.map(([id]) => id)).toEqual([1, 2, 3, 4, 5])
        return { db, before: yield* onClient(db, Effect.all([hostRows, schemaNames])) }
      })

    const engineWorksBesideHost = (names: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const { before, db } = yield* hostDatabase(names)
        yield* onEngine(db, Effect.gen(function*() {
          const owner = yield* createAccount(5_000)
          const submitted = yield* (yield* JobRepo).submit({ job: job(owner.id), maxConcurrentJobs: 10, rateLimits: NO_LIMITS })
          expect(submitted._tag).toBe("Created")
          expect(yield* balanceIsLedger(owner.id)).toBe(4_000)
          expect(yield* migrationRows("genjobs_migrations")).toEqual(ENGINE_MIGRATIONS)
        }))
        const [rows, names2] = yield* onClient(db, Effect.all([hostRows, schemaNames]))
        expect(rows).toEqual(before[0])
        // The engine added only prefixed names and changed none of the host's.
        expect(names2.filter((n) => !before[1].includes(n)).map(namedObject).filter((n) => !n.startsWith("genjobs_"))).toEqual([])
        expect(before[1].filter((n) => !names2.includes(n))).toEqual([])
        // The host's migrator still runs its next migration.
        expect(yield* onClient(db, hostMigrate(names))).toEqual([[6, names[5]]])
      })

    it.live("leaves the host's tables, rows and migrations alone; the host's migrator still runs its next one", () =>
      engineWorksBesideHost(["initial", "jobs", "accounts_plan", "invoices", "jobs_title", "notes"]))

    it.live("does not take the host's tables for its own, even under the engine's migration names", () =>
      engineWorksBesideHost(["initial", "webhook_deliveries", "uploads", "upload_verification", "jobs_title", "notes"]))
  })
}
