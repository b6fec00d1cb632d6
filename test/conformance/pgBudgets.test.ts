import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted, Result } from "effect"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { makeSqlJobDriver } from "../../adapters/sql/SqlJobs.js"
import { layerSqlTables } from "../../adapters/sql/tables.js"
import type { Budget, BudgetScope } from "../../src/domain/budget.js"
import type { AnyRefusal } from "../../src/domain/refusal.js"
import type { ApiKeyId } from "../../src/domain/ids.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { freshPostgresUrl, postgresAvailable } from "../support/postgres.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

const pgUp = await postgresAvailable()

if (!pgUp) {
  describe.skip("postgres budgets (server not reachable)", () => {
    it("runs the budget race across processes", () => undefined)
  })
} else {
  describe("postgres: budgets across processes", () => {
    for (const scope of ["key", "account"] as const) {
      it.live(`1,000 submits from three pools never pass ${scope === "key" ? "a key" : "an account"} budget by a micro-cent`, () =>
        Effect.gen(function*() {
          const url = Redacted.make((yield* Effect.promise(freshPostgresUrl))!)
          const store = layerPostgres({ url, databaseClock: false })
          const owner = yield* createAccount(1_000_000_000, { maxConcurrentJobs: 100_000 }).pipe(Effect.provide(store))
          /** A process of its own: its own pool and its own job repository. */
          const processRepo = Effect.gen(function*() {
            const pool = yield* Layer.build(layerSqlTables().pipe(Layer.provideMerge(PgClient.layer({ url }))))
            return yield* makeJobRepo(yield* makeSqlJobDriver({ databaseClock: false }).pipe(Effect.provide(pool)))
          })
          const repos = yield* Effect.all(Array.from({ length: 3 }, () => processRepo))
          const budgets: ReadonlyArray<{ readonly scope: BudgetScope; readonly budget: Budget }> = [
            { scope, budget: { limitMicroCents: 99_999, period: "month" } }
          ]
          // Costs of 1 to 7 micro-cents, so the last admitted submits fill the limit to the micro-cent when they can.
          const results = yield* Effect.all(
            Array.from({ length: 1_000 }, (_, i) =>
              repos[i % 3]!.submit({
                job: job(owner.id, { apiKeyId: "key_race" as ApiKeyId, costMicroCents: 100 + (i % 7), createdAt: T0 + i }),
                maxConcurrentJobs: 100_000,
                rateLimits: NO_LIMITS,
                budgets
              }).pipe(Effect.result)),
            { concurrency: "unbounded" }
          )
          const admitted = results.filter(Result.isSuccess).map((r) => r.success.job.costMicroCents)
          const spent = admitted.reduce((n, cost) => n + cost, 0)
          const refused = results.filter(Result.isFailure).map((r) => r.failure as AnyRefusal)
          expect(spent).toBeLessThanOrEqual(99_999)
          // Every refusal was right: its job did not fit beside what was admitted before it.
          expect(refused.every((e) => e.code === "BUDGET_EXCEEDED")).toBe(true)
          expect(refused.every((e) => (e.details!["spentMicroCents"] as number) + (e.details!["requiredMicroCents"] as number) > 99_999))
            .toBe(true)
          expect(99_999 - spent).toBeLessThan(Math.min(...refused.map((e) => e.details!["requiredMicroCents"] as number)))
          const [total] = yield* Effect.flatMap(AdminReadRepo, (reads) =>
            reads.spend({ accountId: owner.id, from: 0, to: T0 + 86_400_000, groupBy: ["account"] })).pipe(Effect.provide(store))
          const ledger = yield* Effect.flatMap(AccountRepo, (repo) => repo.ledger(owner.id)).pipe(Effect.provide(store))
          expect(total).toMatchObject({ chargedMicroCents: spent, jobs: admitted.length })
          expect(ledger.filter((e) => e.kind === "charge").reduce((n, e) => n - e.amountMicroCents, 0)).toBe(spent)
        }).pipe(Effect.scoped), 180_000)
    }
  })
}
