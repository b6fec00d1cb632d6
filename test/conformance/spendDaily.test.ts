import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result } from "effect"
import { SqlClient } from "effect/sql"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerSqlStores } from "../../adapters/sql/layer.js"
import * as SqliteClient from "../../adapters/sql/sqliteNode/SqliteClient.js"
import type { AccountId, ApiKeyId } from "../../src/domain/ids.js"
import type { AnyRefusal } from "../../src/domain/refusal.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { freshPostgresUrl, postgresAvailable } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS } from "./fixtures.js"

/**
 * The daily totals budgets read (migration 0025) are kept by triggers on the hourly rollups, so
 * they follow every writer of a rollup: the engine's statements, and a process of the previous
 * release during a rolling upgrade, whose statements write the rollups alone.
 */

const dir = mkdtempSync(join(tmpdir(), "genjobs-spend-daily-"))
let n = 0
const pgUp = await postgresAvailable()

const stores: Record<string, () => Promise<Layer.Layer<JobRepo | SqlClient.SqlClient | Layer.Success<ReturnType<typeof layerSqlStores>>, unknown>>> = {
  sqlite: async () => {
    const client = SqliteClient.layer({ filename: join(dir, `spend-${++n}.db`) })
    return Layer.merge(layerSqlStores(), client).pipe(Layer.provide(client))
  },
  ...(pgUp
    ? {
      postgres: async () => {
        const client = PgClient.layer({ url: Redacted.make((await freshPostgresUrl())!) })
        return Layer.merge(layerSqlStores({ databaseClock: false }), client).pipe(Layer.provide(client))
      }
    }
    : {})
}

const KEY = "key_daily" as ApiKeyId
const DAY = 86_400_000
const NOON = Date.parse("2026-03-03T12:00:00Z")

/** What an account budget of 0 over `period` says was spent: its refusal of a 1 micro-cent job at NOON. */
const accountSpent = (accountId: AccountId, period: "day" | "month" | "total") =>
  Effect.flatMap(JobRepo, (repo) =>
    repo.submit({
      job: job(accountId, { apiKeyId: KEY, costMicroCents: 1, createdAt: NOON }),
      maxConcurrentJobs: 100,
      rateLimits: NO_LIMITS,
      budgets: [{ scope: "account", budget: { limitMicroCents: 0, period } }]
    }).pipe(Effect.result, Effect.map((result) => Result.isFailure(result) ? (result.failure as AnyRefusal).details?.["spentMicroCents"] : "admitted")))

/** The daily totals as stored, and as the hourly rollups sum them: they must agree. */
const dailyBesideRollups = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const stored = yield* sql<{ account_id: string; key_id: string; day: number; net: number }>`
    SELECT account_id, key_id, day, net_micro_cents AS net FROM genjobs_spend_daily WHERE net_micro_cents <> 0 ORDER BY 1, 2, 3`
  const rolled = yield* sql<{ account_id: string; key_id: string; day: number; net: number }>`
    SELECT account_id, key_id, day, SUM(net) AS net FROM (
      SELECT account_id, key_id, hour - hour % ${DAY} AS day, charged_micro_cents - refunded_micro_cents AS net FROM genjobs_spend_hourly
      UNION ALL
      SELECT account_id, key_id, -1, charged_micro_cents - refunded_micro_cents FROM genjobs_spend_hourly
    ) r GROUP BY account_id, key_id, day HAVING SUM(net) <> 0 ORDER BY 1, 2, 3`
  const plain = (rows: ReadonlyArray<{ account_id: string; key_id: string; day: number; net: number }>) =>
    rows.map((row) => [row.account_id, row.key_id, Number(row.day), Number(row.net)])
  return { stored: plain(stored), rolled: plain(rolled) }
})

for (const [name, makeStores] of Object.entries(stores)) {
  describe(`${name}: daily spend totals`, () => {
    it.live("count a rollup written by a statement of the previous release, inserted and then added to", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const owner = yield* createAccount(1_000_000)
        // As the previous release charges and refunds: the rollup's upsert, nothing else of spend.
        const earlierRelease = (charged: number, refunded: number) =>
          sql`INSERT INTO genjobs_spend_hourly AS s
              (account_id, key_id, model, hour, charged_micro_cents, refunded_micro_cents, jobs, failed, cancelled)
            VALUES (${owner.id}, ${KEY}, 'demo/text', ${NOON - 3_600_000}, ${charged}, ${refunded}, 1, 0, 0)
            ON CONFLICT (account_id, hour, key_id, model) DO UPDATE SET
              charged_micro_cents = s.charged_micro_cents + excluded.charged_micro_cents,
              refunded_micro_cents = s.refunded_micro_cents + excluded.refunded_micro_cents,
              jobs = s.jobs + excluded.jobs`
        yield* earlierRelease(500, 0)
        expect(yield* accountSpent(owner.id, "day")).toBe(500)
        yield* earlierRelease(300, 0)
        yield* earlierRelease(0, 200)
        expect(yield* accountSpent(owner.id, "day")).toBe(600)
        expect(yield* accountSpent(owner.id, "total")).toBe(600)
        // A rollup whose net does not move (a free job counted) changes nothing.
        yield* earlierRelease(0, 0)
        expect(yield* accountSpent(owner.id, "month")).toBe(600)
        const { rolled, stored } = yield* dailyBesideRollups
        expect(stored).toEqual(rolled)
      }).pipe(Effect.provide(Layer.unwrap(Effect.promise(makeStores)))))

    it.live("agree with the hourly rollups after submits, refunds and free jobs over several days and keys", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owners = [yield* createAccount(10_000_000), yield* createAccount(10_000_000)]
        const made = Array.from({ length: 40 }, (_, i) =>
          job(owners[i % 2]!.id, {
            apiKeyId: i % 3 === 0 ? null : i % 3 === 1 ? KEY : "key_other" as ApiKeyId,
            costMicroCents: i % 5 === 0 ? 0 : 37 * i,
            createdAt: NOON - 5 * DAY + i * 9_000_000
          }))
        for (const [i, j] of made.entries()) {
          const budgets = i % 2 === 0 ? [{ scope: "key" as const, budget: { limitMicroCents: 1_000_000, period: "month" as const } }] : []
          expect((yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS, budgets }))._tag).toBe("Created")
        }
        for (const j of made.filter((_, i) => i % 4 === 1)) yield* repo.cancel(j.id, j.accountId, NOON)
        const { rolled, stored } = yield* dailyBesideRollups
        expect(stored.length).toBeGreaterThan(10)
        expect(stored).toEqual(rolled)
      }).pipe(Effect.provide(Layer.unwrap(Effect.promise(makeStores)))))
  })
}
