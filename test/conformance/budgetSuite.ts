import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option, Result } from "effect"
import { type Budget, type BudgetScope, periodStart } from "../../src/domain/budget.js"
import type { AnyRefusal } from "../../src/domain/refusal.js"
import type { AccountId, ApiKeyId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { retainedStatuses, unsentDeliveries } from "../../src/domain/retention.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { RetentionRepo } from "../../src/ports/RetentionRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

export type BudgetStores = AccountRepo | JobRepo | AdminReadRepo | RetentionRepo

const KEY_A = "key_a" as ApiKeyId
const KEY_B = "key_b" as ApiKeyId
const DAY = 86_400_000
/** A UTC midnight: T0 is not one. */
const MIDNIGHT = Math.floor(T0 / DAY) * DAY + DAY

const submitWith = (j: Job, budgets: ReadonlyArray<{ readonly scope: BudgetScope; readonly budget: Budget }>) =>
  Effect.flatMap(JobRepo, (repo) =>
    repo.submit({ job: j, maxConcurrentJobs: 100_000, rateLimits: NO_LIMITS, budgets }).pipe(Effect.result))

const refusal = (result: Result.Result<unknown, unknown>) => (Result.isFailure(result) ? (result.failure as AnyRefusal) : undefined)

/** Every rollup of the account, summed, next to its ledger's job lines. */
const rollupsAndLedger = (accountId: AccountId) =>
  Effect.gen(function*() {
    const [total] = yield* Effect.flatMap(AdminReadRepo, (reads) => reads.spend({ accountId, from: 0, to: T0 + 400 * DAY, groupBy: ["account"] }))
    const ledger = yield* Effect.flatMap(AccountRepo, (repo) => repo.ledger(accountId))
    const sumOf = (kind: string) => ledger.filter((e) => e.kind === kind).reduce((n, e) => n + Math.abs(e.amountMicroCents), 0)
    return { total, charged: sumOf("charge"), refunded: sumOf("refund") }
  })

/**
 * Budgets on keys and accounts, decided in the submit's transaction, and the spend rollups kept
 * with each ledger line: what every store must share.
 */
export const runBudgetConformance = (name: string, makeLayer: () => Layer.Layer<BudgetStores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, BudgetStores>, timeout?: number) =>
    it.live(title, () => Effect.provide(body(), makeLayer()), timeout)

  describe(`${name}: budgets`, () => {
    for (const scope of ["key", "account"] as const) {
      test(`1,000 parallel submits against ${scope === "key" ? "a key" : "an account"} budget admit exactly what the limit allows`, () =>
        Effect.gen(function*() {
          const owner = yield* createAccount(10_000_000, { maxConcurrentJobs: 100_000 })
          const budget: Budget = { limitMicroCents: 12_345, period: "day" }
          const results = yield* Effect.all(
            Array.from({ length: 1_000 }, (_, i) =>
              submitWith(job(owner.id, { apiKeyId: KEY_A, costMicroCents: 100, createdAt: T0 + i }), [{ scope, budget }])),
            { concurrency: "unbounded" }
          )
          expect(results.filter(Result.isSuccess)).toHaveLength(123)
          const refused = results.map(refusal).filter((e) => e !== undefined)
          expect(new Set(refused.map((e) => e.code))).toEqual(new Set(["BUDGET_EXCEEDED"]))
          expect(refused[0]?.details).toMatchObject({ budget: scope, limitMicroCents: 12_345, spentMicroCents: 12_300 })
          const { charged, total } = yield* rollupsAndLedger(owner.id)
          expect(charged).toBe(12_300)
          expect(total).toMatchObject({ chargedMicroCents: 12_300, jobs: 123 })
        }), 120_000)
    }

    test("a key's budget counts that key's spend only; the account's counts all its keys", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(1_000_000)
        const keyBudget = { scope: "key" as const, budget: { limitMicroCents: 200, period: "month" as const } }
        const accountBudget = { scope: "account" as const, budget: { limitMicroCents: 500, period: "total" as const } }
        const at = (i: number, key: ApiKeyId) => job(owner.id, { apiKeyId: key, costMicroCents: 100, createdAt: T0 + i })
        expect(Result.isSuccess(yield* submitWith(at(1, KEY_A), [keyBudget, accountBudget]))).toBe(true)
        expect(Result.isSuccess(yield* submitWith(at(2, KEY_A), [keyBudget, accountBudget]))).toBe(true)
        expect(refusal(yield* submitWith(at(3, KEY_A), [keyBudget, accountBudget]))?.details).toMatchObject({ budget: "key" })
        for (const i of [4, 5, 6]) expect(Result.isSuccess(yield* submitWith(at(i, KEY_B), [accountBudget]))).toBe(true)
        const refused = refusal(yield* submitWith(at(7, KEY_B), [accountBudget]))
        expect(refused?.details).toEqual({
          budget: "account",
          period: "total",
          limitMicroCents: 500,
          spentMicroCents: 500,
          requiredMicroCents: 100,
          resetsAt: null
        })
      }))

    test("a refund gives the budget back; a refused submit charges nothing", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(1_000_000)
        const budgets = [{ scope: "key" as const, budget: { limitMicroCents: 300, period: "day" as const } }]
        const made = [1, 2, 3].map((i) => job(owner.id, { apiKeyId: KEY_A, costMicroCents: 100, createdAt: T0 + i }))
        for (const j of made) expect(Result.isSuccess(yield* submitWith(j, budgets))).toBe(true)
        const fourth = job(owner.id, { apiKeyId: KEY_A, costMicroCents: 100, createdAt: T0 + 4 })
        expect(refusal(yield* submitWith(fourth, budgets))?.code).toBe("BUDGET_EXCEEDED")
        const balance = (yield* Effect.flatMap(AccountRepo, (r) => r.get(owner.id))).pipe(Option.getOrThrow).balanceMicroCents
        expect(balance).toBe(1_000_000 - 300)
        yield* Effect.flatMap(JobRepo, (repo) => repo.cancel(made[0]!.id, owner.id, T0 + 5))
        expect(Result.isSuccess(yield* submitWith(fourth, budgets))).toBe(true)
      }))

    test("a day's budget starts again at the next UTC midnight; the refusal says when", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(1_000_000)
        const budgets = [{ scope: "account" as const, budget: { limitMicroCents: 100, period: "day" as const } }]
        const at = (createdAt: number) => job(owner.id, { apiKeyId: KEY_A, costMicroCents: 100, createdAt })
        expect(Result.isSuccess(yield* submitWith(at(MIDNIGHT - 2), budgets))).toBe(true)
        expect(refusal(yield* submitWith(at(MIDNIGHT - 1), budgets))?.details).toMatchObject({
          resetsAt: new Date(MIDNIGHT).toISOString()
        })
        expect(Result.isSuccess(yield* submitWith(at(MIDNIGHT), budgets))).toBe(true)
      }))
    test("day, month and total budgets each sum their period; a refund counts in the day its job was charged", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(1_000_000)
        const repo = yield* JobRepo
        const at = (iso: string, key: ApiKeyId, costMicroCents: number) =>
          job(owner.id, { apiKeyId: key, costMicroCents, createdAt: Date.parse(iso) })
        const made = [
          at("2026-02-27T10:00:00Z", KEY_A, 100),
          at("2026-02-27T11:00:00Z", KEY_B, 50),
          at("2026-03-01T09:00:00Z", KEY_A, 200),
          at("2026-03-01T23:59:59Z", KEY_B, 400),
          at("2026-03-02T09:00:00Z", KEY_B, 800),
          at("2026-03-03T00:00:00Z", KEY_A, 1_600)
        ]
        for (const j of made) expect(Result.isSuccess(yield* submitWith(j, []))).toBe(true)
        const now = Date.parse("2026-03-03T12:00:00Z")
        yield* repo.cancel(made[1]!.id, owner.id, now)
        yield* repo.cancel(made[2]!.id, owner.id, now)
        /** What a budget of 0 says was spent, as its refusal of a 1 micro-cent job at `now`. */
        const spent = (scope: BudgetScope, period: Budget["period"], key: ApiKeyId = KEY_A) =>
          Effect.map(
            submitWith(job(owner.id, { apiKeyId: key, costMicroCents: 1, createdAt: now }), [{ scope, budget: { limitMicroCents: 0, period } }]),
            (result) => refusal(result)?.details?.["spentMicroCents"]
          )
        expect(yield* spent("account", "day")).toBe(1_600)
        expect(yield* spent("account", "month")).toBe(400 + 800 + 1_600)
        expect(yield* spent("account", "total")).toBe(100 + 400 + 800 + 1_600)
        expect(yield* spent("key", "day", KEY_B)).toBe(0)
        expect(yield* spent("key", "month", KEY_A)).toBe(1_600)
        expect(yield* spent("key", "month", KEY_B)).toBe(400 + 800)
        expect(yield* spent("key", "total", KEY_A)).toBe(100 + 1_600)
        // What GET /v1/account shows of the budgets: the same reads, without the account's lock.
        const reads = yield* AdminReadRepo
        const shown = (keyId: ApiKeyId, account: Budget["period"], key: Budget["period"]) =>
          reads.budgetSpend({ accountId: owner.id, keyId, since: { account: periodStart(account, now), key: periodStart(key, now) } })
        expect(yield* shown(KEY_A, "month", "total")).toEqual({ accountSpent: 400 + 800 + 1_600, keySpent: 100 + 1_600 })
        expect(yield* shown(KEY_B, "total", "day")).toEqual({ accountSpent: 100 + 400 + 800 + 1_600, keySpent: 0 })
        expect(yield* reads.budgetSpend({ accountId: owner.id, keyId: KEY_B, since: { key: periodStart("month", now) } }))
          .toEqual({ accountSpent: null, keySpent: 400 + 800 })
      }))
  })

  describe(`${name}: spend rollups`, () => {
    test("sum to the ledger after a mixed workload, and outlive the jobs retention deletes", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const reads = yield* AdminReadRepo
        const owner = yield* createAccount(1_000_000)
        const made = Array.from({ length: 12 }, (_, i) =>
          job(owner.id, {
            apiKeyId: i % 3 === 0 ? null : i % 2 === 0 ? KEY_A : KEY_B,
            model: i % 2 === 0 ? "demo/text" : "demo/image",
            costMicroCents: i % 4 === 0 ? 0 : 100 * i,
            createdAt: T0 + i * 1_800_000
          }))
        const budgets = [{ scope: "account" as const, budget: { limitMicroCents: 1_000_000, period: "total" as const } }]
        for (const [i, j] of made.entries()) {
          const result = yield* repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS, ...(i % 2 === 0 ? { budgets } : {}) })
          expect(result._tag).toBe("Created")
        }
        const now = T0 + 12 * 1_800_000
        // 0..3 cancelled; then claim the rest and fail 4..6, complete 7..9, leave 10, 11 to be abandoned.
        for (const j of made.slice(0, 4)) yield* repo.cancel(j.id, owner.id, now)
        const claimed = yield* repo.claimBatch({ workerId: "w", now, leaseMs: 1_000, maxAttempts: 1, limit: 100 })
        expect(claimed).toHaveLength(8)
        for (const j of made.slice(4, 7)) yield* repo.fail(j.id, "w", { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, now + 1)
        for (const j of made.slice(7, 10)) yield* repo.complete(j.id, "w", [], now + 1)
        expect(yield* repo.reap({ workerId: "r", now: now + 5_000, passMs: 1_000, maxAttempts: 1, limit: 100 })).toBe(2)

        const { charged, refunded, total } = yield* rollupsAndLedger(owner.id)
        expect(total).toEqual({
          account: owner.id,
          chargedMicroCents: charged,
          refundedMicroCents: refunded,
          jobs: 12,
          failed: 5,
          cancelled: 4
        })
        expect(charged).toBe(made.reduce((n, j) => n + j.costMicroCents, 0))

        const byKeyModel = yield* reads.spend({ accountId: owner.id, from: 0, to: now + DAY, groupBy: ["key", "model"] })
        expect(byKeyModel.map((g) => [g.key, g.model, g.jobs])).toEqual([
          [null, "demo/image", 2],
          [null, "demo/text", 2],
          [KEY_A, "demo/text", 4],
          [KEY_B, "demo/image", 4]
        ])
        const byHour = yield* reads.spend({ accountId: owner.id, from: T0 - 3_600_000, to: now + DAY, groupBy: ["hour"] })
        expect(byHour.reduce((n, g) => n + g.jobs, 0)).toBe(12)
        expect(byHour.every((g) => g.hour! % 3_600_000 === 0)).toBe(true)
        const byDay = yield* reads.spend({ accountId: owner.id, from: 0, to: now + DAY, groupBy: ["day"] })
        // T0 is 22:13 UTC: the six hours of submits cross midnight.
        expect(byDay.map((g) => [g.day, g.jobs])).toEqual([[MIDNIGHT - DAY, 4], [MIDNIGHT, 8]])
        expect(byDay.reduce((n, g) => n + g.chargedMicroCents, 0)).toBe(charged)

        const retention = yield* RetentionRepo
        const filter = { statuses: retainedStatuses, unsentDeliveries }
        const ended = yield* retention.endedJobs({ ...filter, endedBy: now + DAY, limit: 100 })
        yield* retention.removeJobs({ ...filter, jobIds: ended })
        expect((yield* rollupsAndLedger(owner.id)).total).toEqual(total)
      }))
  })
}
