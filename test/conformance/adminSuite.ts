import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, type Layer, Option } from "effect"
import type { AuditEntry } from "../../src/domain/audit.js"
import type { JobCursor } from "../../src/domain/cursor.js"
import type { AccountId, ApiKeyId } from "../../src/domain/ids.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { AccountSettingsRepo } from "../../src/ports/AccountSettingsRepo.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { AuditLog } from "../../src/ports/AuditLog.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { fairStep } from "../../src/domain/fairShare.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

export type AdminStores = AccountRepo | ApiKeyRepo | JobRepo | WebhookDeliveryRepo | AdminReadRepo | AccountSettingsRepo | AuditLog

const cursorOf = (rows: ReadonlyArray<{ readonly createdAt: number; readonly id: string }>, limit: number): JobCursor => {
  const last = rows[limit - 1]!
  return { createdAt: last.createdAt, id: last.id }
}

/** Every row of a list read `limit` at a time, each page after the last one's cursor. */
const everyPage = <A extends { readonly createdAt: number; readonly id: string }, E, R>(
  read: (after: JobCursor | undefined) => Effect.Effect<ReadonlyArray<A>, E, R>,
  limit: number
) =>
  Effect.gen(function*() {
    const seen: Array<string> = []
    let after: JobCursor | undefined
    // Bounded, so a cursor that stops advancing fails the comparison instead of hanging.
    for (let page = 0; page < 100; page++) {
      const rows = yield* read(after)
      seen.push(...rows.slice(0, limit).map((r) => r.id))
      if (rows.length <= limit) break
      after = cursorOf(rows, limit)
    }
    return seen
  })

/** Ids newest first over (createdAt, id), as every list orders them. */
const newestFirst = (rows: ReadonlyArray<{ readonly createdAt: number; readonly id: string }>) =>
  [...rows].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((r) => r.id)

const entry = (overrides: Partial<AuditEntry> = {}): AuditEntry => ({
  id: `aud_${Math.random().toString(36).slice(2)}`,
  actor: "alice",
  action: "account.update",
  target: "acc_x",
  summary: { changes: { name: { from: "a", to: "b" } } },
  requestId: "req_1",
  createdAt: T0,
  ...overrides
})

/**
 * The admin ports every store must answer alike. `transactional` stores undo a change whose
 * audit entry cannot be written.
 */
export const runAdminConformance = (
  name: string,
  makeLayer: () => Layer.Layer<AdminStores, unknown>,
  options: { readonly transactional: boolean }
) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, AdminStores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  const submit = (j: ReturnType<typeof job>) =>
    Effect.flatMap(JobRepo, (repo) => repo.submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS }))

  describe(`${name}: AdminReadRepo`, () => {
    test("lists accounts newest first, paged, and finds them by a fragment of name or id", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const made = [
          yield* createAccount(0, { name: "Acme Studio", createdAt: T0 + 1 }),
          yield* createAccount(0, { name: "Globex", createdAt: T0 + 2 }),
          yield* createAccount(0, { name: "ACME labs", createdAt: T0 + 3 }),
          yield* createAccount(0, { name: "50% off_sale", createdAt: T0 + 4 })
        ]
        const all = yield* reads.accounts({ limit: 10 })
        expect(all.map((a) => a.name)).toEqual(["50% off_sale", "ACME labs", "Globex", "Acme Studio"])
        expect(all[0]).toEqual(made[3])
        const first = yield* reads.accounts({ limit: 2 })
        expect(first).toHaveLength(3)
        const rest = yield* reads.accounts({ limit: 2, after: cursorOf(first, 2) })
        expect([...first.slice(0, 2), ...rest].map((a) => a.name)).toEqual(all.map((a) => a.name))
        expect((yield* reads.accounts({ limit: 10, search: "acme" })).map((a) => a.name)).toEqual(["ACME labs", "Acme Studio"])
        expect((yield* reads.accounts({ limit: 10, search: made[1]!.id.slice(4, 12) })).map((a) => a.id)).toEqual([made[1]!.id])
        // LIKE's wildcards match only themselves.
        expect((yield* reads.accounts({ limit: 10, search: "50%" })).map((a) => a.name)).toEqual(["50% off_sale"])
        expect(yield* reads.accounts({ limit: 10, search: "o_f" })).toEqual([])
        expect(yield* reads.accounts({ limit: 10, search: "%" })).toHaveLength(1)
        expect(yield* reads.accounts({ limit: 10, search: "nobody" })).toEqual([])
      }))

    test("lists an account's keys oldest first, and only its own", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const keys = yield* ApiKeyRepo
        const owner = yield* createAccount(0)
        const other = yield* createAccount(0)
        const key = (accountId: AccountId, n: number) => ({
          id: `key_${n}` as ApiKeyId,
          accountId,
          name: `k${n}`,
          scopes: ["submit_job" as const],
          allowedIPs: ["10.0.0.0/8"],
          hash: `hash${n}`,
          hint: `gjk_${n}`,
          active: true,
          expiresAt: n === 2 ? T0 + 99 : null,
          createdAt: T0 + 10 - n
        })
        for (const n of [1, 2]) yield* keys.create(key(owner.id, n))
        yield* keys.create(key(other.id, 3))
        yield* keys.deactivate("key_1" as ApiKeyId)
        expect(yield* reads.keys(owner.id)).toEqual([key(owner.id, 2), { ...key(owner.id, 1), active: false }])
        expect(yield* reads.keys("acc_missing" as AccountId)).toEqual([])
      }))

    test("lists jobs across accounts newest first, by account, status, model and creation time", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const jobs = yield* JobRepo
        const a = yield* createAccount(1_000_000)
        const b = yield* createAccount(1_000_000)
        const made = [
          job(a.id, { createdAt: T0 + 1, model: "demo/text" }),
          job(b.id, { createdAt: T0 + 2, model: "demo/image" }),
          job(a.id, { createdAt: T0 + 3, model: "demo/image" }),
          job(b.id, { createdAt: T0 + 4, model: "demo/text" })
        ]
        for (const j of made) yield* submit(j)
        yield* jobs.cancel(made[2]!.id, a.id, T0 + 10)
        const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((r) => r.id)
        const all = yield* reads.jobs({ limit: 10 })
        expect(ids(all)).toEqual([made[3]!.id, made[2]!.id, made[1]!.id, made[0]!.id])
        expect(all[1]).toMatchObject({ status: "cancelled", accountId: a.id })
        expect(ids(yield* reads.jobs({ limit: 10, accountId: a.id }))).toEqual([made[2]!.id, made[0]!.id])
        expect(ids(yield* reads.jobs({ limit: 10, status: "cancelled" }))).toEqual([made[2]!.id])
        expect(ids(yield* reads.jobs({ limit: 10, model: "demo/image", status: "pending" }))).toEqual([made[1]!.id])
        expect(ids(yield* reads.jobs({ limit: 10, createdFrom: T0 + 2, createdBefore: T0 + 4 }))).toEqual([made[2]!.id, made[1]!.id])
        const page = yield* reads.jobs({ limit: 3 })
        expect(page).toHaveLength(4)
        expect(ids(yield* reads.jobs({ limit: 3, after: cursorOf(page, 3) }))).toEqual([made[0]!.id])
      }))

    test("pages jobs across accounts over rows sharing created_at exactly, with and without filters", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const a = yield* createAccount(1_000_000)
        const b = yield* createAccount(1_000_000)
        const made = Array.from({ length: 12 }, (_, i) =>
          job(i % 3 === 0 ? a.id : b.id, { createdAt: T0 + Math.floor(i / 4), model: i % 2 === 0 ? "demo/text" : "demo/image" }))
        for (const j of made) yield* submit(j)
        expect(yield* everyPage((after) => reads.jobs({ limit: 2, after }), 2)).toEqual(newestFirst(made))
        expect(yield* everyPage((after) => reads.jobs({ limit: 2, after, accountId: b.id }), 2))
          .toEqual(newestFirst(made.filter((j) => j.accountId === b.id)))
        expect(yield* everyPage((after) => reads.jobs({ limit: 2, after, model: "demo/image", status: "pending" }), 2))
          .toEqual(newestFirst(made.filter((j) => j.model === "demo/image")))
      }))

    test("lists webhook deliveries across accounts newest first, by account and status", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const jobs = yield* JobRepo
        const deliveries = yield* WebhookDeliveryRepo
        const a = yield* createAccount(1_000_000)
        const b = yield* createAccount(1_000_000)
        const made = [a, b, a].map((acc, i) => job(acc.id, { createdAt: T0 + i, webhookUrl: `https://receiver.genjobs.test/${i}` }))
        for (const [i, j] of made.entries()) {
          yield* submit(j)
          yield* jobs.fail(j.id, null, { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, T0 + 100 + i)
        }
        const all = yield* reads.deliveries({ limit: 10 })
        expect(all.map((d) => d.jobId)).toEqual([made[2]!.id, made[1]!.id, made[0]!.id])
        expect(all.every((d) => d.status === "pending")).toBe(true)
        const claimed = (yield* deliveries.claimDue({ workerId: "d", now: T0 + 1_000, leaseMs: 60_000, maxPerAccount: 4, limit: 1 }))[0]!
        yield* deliveries.recordAttempt(claimed.id, "d", {
          attempt: 1,
          at: T0 + 1_000,
          statusCode: 200,
          error: null,
          durationMs: 5,
          responseBody: "ok"
        }, { status: "sent" })
        expect((yield* reads.deliveries({ limit: 10, status: "sent" })).map((d) => d.id)).toEqual([claimed.id])
        expect((yield* reads.deliveries({ limit: 10, accountId: b.id })).map((d) => d.jobId)).toEqual([made[1]!.id])
        const page = yield* reads.deliveries({ limit: 2 })
        expect((yield* reads.deliveries({ limit: 2, after: cursorOf(page, 2) })).map((d) => d.jobId)).toEqual([made[0]!.id])
      }))

    test("counts pending and processing jobs, and reads the runs of jobs completed in the range, newest end first", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const a = yield* createAccount(1_000_000)
        const done = (model: string, startedAt: number, completedAt: number) =>
          submit(job(a.id, { model, status: "completed", startedAt, completedAt, createdAt: startedAt - 5 }))
        yield* done("demo/text", T0 + 100, T0 + 400)
        yield* done("demo/text", T0 + 200, T0 + 1_200)
        yield* done("demo/image", T0 + 300, T0 + 350)
        yield* done("demo/image", T0 + 10_000, T0 + 20_000) // ends after the range
        yield* submit(job(a.id, { status: "failed", startedAt: T0 + 1, completedAt: T0 + 500 })) // not completed
        yield* submit(job(a.id, { status: "processing", startedAt: T0 + 1 }))
        yield* submit(job(a.id))
        yield* submit(job(a.id))
        const stats = yield* reads.stats({ from: T0, to: T0 + 10_000, limit: 10 })
        expect(stats.pending).toBe(2)
        expect(stats.processing).toBe(1)
        expect(stats.runs).toEqual([
          { model: "demo/text", runMs: 1_000 },
          { model: "demo/text", runMs: 300 },
          { model: "demo/image", runMs: 50 }
        ])
        expect((yield* reads.stats({ from: T0, to: T0 + 10_000, limit: 2 })).runs.map((r) => r.runMs)).toEqual([1_000, 300])
        expect((yield* reads.stats({ from: T0 + 401, to: T0 + 10_000, limit: 10 })).runs).toEqual([{ model: "demo/text", runMs: 1_000 }])
      }))

    test("sums the waiting jobs per account and version in one grouped read, and the running ones per version", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const a = yield* createAccount(1_000_000)
        const b = yield* createAccount(1_000_000, { fairShareWeight: 4 })
        for (let n = 0; n < 3; n++) yield* submit(job(a.id, { createdAt: T0 + n }))
        yield* submit(job(a.id, { version: "v2", createdAt: T0 + 3 }))
        for (let n = 0; n < 2; n++) yield* submit(job(b.id, { createdAt: T0 + 10 + n }))
        yield* submit(job(a.id, { status: "processing", startedAt: T0 + 1 }))
        yield* submit(job(b.id, { status: "processing", startedAt: T0 + 1 }))
        yield* submit(job(b.id, { status: "completed", startedAt: T0 + 1, completedAt: T0 + 2 }))
        const { running, waiting } = yield* reads.waitingSummary
        const group = (accountId: string, version: string) => waiting.find((g) => g.accountId === accountId && g.version === version)!
        expect(waiting).toHaveLength(3)
        const a1 = group(a.id, "v1")
        expect(a1).toMatchObject({ model: "demo/text", count: 3, weight: 1 })
        // An account's waiting keys one step apart: exact positions from the head, the tail and the count.
        expect(a1.tailKey - a1.headKey).toBe(2 * fairStep(1))
        expect(group(a.id, "v2")).toMatchObject({ count: 1, headKey: a1.tailKey + fairStep(1) })
        const b1 = group(b.id, "v1")
        // B had nothing waiting: its first key is the smallest waiting one; its step is its weight's.
        expect(b1).toMatchObject({ count: 2, headKey: a1.headKey, tailKey: a1.headKey + fairStep(4), weight: 4 })
        expect(running).toEqual([{ model: "demo/text", version: "v1", count: 2 }])
      }))

    test("pages an account's ledger oldest first", () =>
      Effect.gen(function*() {
        const reads = yield* AdminReadRepo
        const accounts = yield* AccountRepo
        const owner = yield* createAccount(100)
        for (const n of [1, 2, 3]) yield* accounts.addCredits(owner.id, n, T0 + n)
        const full = yield* accounts.ledger(owner.id)
        const first = yield* reads.ledger({ accountId: owner.id, limit: 2 })
        expect(first).toHaveLength(3)
        const rest = yield* reads.ledger({ accountId: owner.id, limit: 2, after: cursorOf(first, 2) })
        expect([...first.slice(0, 2), ...rest]).toEqual(full)
        expect(full.map((e) => e.amountMicroCents)).toEqual([100, 1, 2, 3])
      }))
  })

  describe(`${name}: AccountSettingsRepo`, () => {
    test("sets only the fields given and leaves the balance alone; unknown accounts are None", () =>
      Effect.gen(function*() {
        const settings = yield* AccountSettingsRepo
        const accounts = yield* AccountRepo
        const created = yield* createAccount(700, { name: "old", segments: ["basic"] })
        const updated = Option.getOrThrow(yield* settings.update(created.id, {
          maxConcurrentJobs: 9,
          segments: ["pro", "beta"],
          discounts: [{ type: "vip", percentage: 12.5, models: ["demo/text"] }]
        }))
        const expected = {
          ...created,
          maxConcurrentJobs: 9,
          segments: ["pro", "beta"],
          discounts: [{ type: "vip", percentage: 12.5, models: ["demo/text"] }]
        }
        expect(updated).toEqual(expected)
        expect(Option.getOrThrow(yield* accounts.get(created.id))).toEqual(expected)
        expect(Option.getOrThrow(yield* settings.update(created.id, { name: "new", allowedModels: ["x/y"] }))).toMatchObject({
          name: "new",
          allowedModels: ["x/y"],
          maxConcurrentJobs: 9,
          balanceMicroCents: 700
        })
        expect(Option.isNone(yield* settings.update("acc_missing" as AccountId, { name: "x" }))).toBe(true)
      }))

    test("keeps standardWebhooks: created on, turned off and on again, read alone, with a key and in the list", () =>
      Effect.gen(function*() {
        const settings = yield* AccountSettingsRepo
        const accounts = yield* AccountRepo
        const keys = yield* ApiKeyRepo
        const created = yield* createAccount(0, { standardWebhooks: true })
        const other = yield* createAccount(0)
        const read = (id: AccountId) => Effect.map(accounts.get(id), (a) => Option.getOrThrow(a).standardWebhooks)
        expect([yield* read(created.id), yield* read(other.id)]).toEqual([true, false])
        expect(Option.getOrThrow(yield* settings.update(created.id, { standardWebhooks: false }))).toEqual({ ...created, standardWebhooks: false })
        expect(yield* read(created.id)).toBe(false)
        expect(Option.getOrThrow(yield* settings.update(created.id, { standardWebhooks: true, name: "on" }))).toEqual({ ...created, name: "on" })
        expect([yield* read(created.id), yield* read(other.id)]).toEqual([true, false])
        yield* keys.create({
          id: "key_std" as ApiKeyId, accountId: created.id, name: "k", scopes: [], allowedIPs: [], hash: "c".repeat(64),
          hint: "gjk_c", active: true, expiresAt: null, createdAt: T0
        })
        expect(Option.getOrThrow(Option.getOrThrow(yield* keys.findWithAccount!("c".repeat(64))).account).standardWebhooks).toBe(true)
        const listed = yield* (yield* AdminReadRepo).accounts({ limit: 10 })
        expect(listed.map((a) => [a.id, a.standardWebhooks]).sort()).toEqual([[created.id, true], [other.id, false]].sort())
      }))

    test("a fair-share weight set on an account spaces its next submits by its step; weight 1 reads as none set", () =>
      Effect.gen(function*() {
        const settings = yield* AccountSettingsRepo
        const accounts = yield* AccountRepo
        const created = yield* createAccount(100_000)
        const keyOf = (outcome: { readonly job: ReturnType<typeof job> }) => outcome.job.fairKey
        expect(keyOf(yield* submit(job(created.id)))).toBe(0)
        expect(keyOf(yield* submit(job(created.id)))).toBe(1_000_000)
        expect(Option.getOrThrow(yield* settings.update(created.id, { fairShareWeight: 4 })).fairShareWeight).toBe(4)
        expect(Option.getOrThrow(yield* accounts.get(created.id)).fairShareWeight).toBe(4)
        // Jobs already waiting keep their keys; the next one follows the last by the new step.
        expect(keyOf(yield* submit(job(created.id)))).toBe(1_250_000)
        const reset = Option.getOrThrow(yield* settings.update(created.id, { fairShareWeight: 1 }))
        const asCreated = { ...created, balanceMicroCents: 100_000 - 3 * 1_000 }
        expect(reset).toEqual(asCreated)
        expect(Option.getOrThrow(yield* accounts.get(created.id))).toEqual(asCreated)
      }))
  })

  describe(`${name}: AuditLog`, () => {
    test("appends an entry with each change and lists them newest first, filtered and paged", () =>
      Effect.gen(function*() {
        const audit = yield* AuditLog
        const made = [
          entry({ createdAt: T0 + 1, actor: "alice", target: "acc_1", requestId: null }),
          entry({ createdAt: T0 + 2, actor: "bob", action: "key.create", target: "key_1", summary: { scopes: ["submit_job"] } }),
          entry({ createdAt: T0 + 3, actor: "alice", action: "catalog.replace", target: "catalog" })
        ]
        for (const e of made) expect(yield* audit.recorded(Effect.succeed(e.id), () => e)).toBe(e.id)
        expect(yield* audit.list({ limit: 10 })).toEqual([made[2], made[1], made[0]])
        expect((yield* audit.list({ limit: 10, actor: "alice" })).map((e) => e.id)).toEqual([made[2]!.id, made[0]!.id])
        expect((yield* audit.list({ limit: 10, action: "key.create" })).map((e) => e.id)).toEqual([made[1]!.id])
        expect((yield* audit.list({ limit: 10, target: "acc_1" })).map((e) => e.id)).toEqual([made[0]!.id])
        const page = yield* audit.list({ limit: 2 })
        expect(yield* audit.list({ limit: 2, after: cursorOf(page, 2) })).toEqual([made[0]])
      }))

    test("pages entries sharing created_at exactly, with and without a filter", () =>
      Effect.gen(function*() {
        const audit = yield* AuditLog
        const made = Array.from({ length: 10 }, (_, i) => entry({ createdAt: T0 + Math.floor(i / 3), actor: i % 2 === 0 ? "alice" : "bob" }))
        for (const e of made) yield* audit.recorded(Effect.void, () => e)
        expect(yield* everyPage((after) => audit.list({ limit: 2, after }), 2)).toEqual(newestFirst(made))
        expect(yield* everyPage((after) => audit.list({ limit: 2, after, actor: "bob" }), 2))
          .toEqual(newestFirst(made.filter((e) => e.actor === "bob")))
      }))

    test("lists an entry whose action a newer release recorded, as written (two releases share the log during a rolling upgrade)", () =>
      Effect.gen(function*() {
        const audit = yield* AuditLog
        const newer = entry({ createdAt: T0 + 1, action: "account.archive" })
        yield* audit.recorded(Effect.void, () => newer)
        const known = entry({ createdAt: T0 + 2 })
        yield* audit.recorded(Effect.void, () => known)
        expect(yield* audit.list({ limit: 10 })).toEqual([known, newer])
      }))

    test("a change that fails leaves no entry", () =>
      Effect.gen(function*() {
        const audit = yield* AuditLog
        const exit = yield* Effect.exit(audit.recorded(Effect.fail("refused"), () => entry()))
        expect(Exit.isFailure(exit)).toBe(true)
        expect(yield* audit.list({ limit: 10 })).toEqual([])
      }))

    if (options.transactional) {
      test("an entry that cannot be written undoes its change", () =>
        Effect.gen(function*() {
          const audit = yield* AuditLog
          const accounts = yield* AccountRepo
          const first = entry()
          yield* audit.recorded(Effect.void, () => first)
          // The same id again: the entry's insert fails, and the account made with it must go too.
          const exit = yield* Effect.exit(audit.recorded(createAccount(500, { name: "ghost" }), () => first))
          expect(Exit.isFailure(exit)).toBe(true)
          expect(yield* accounts.count).toBe(0)
          expect(yield* audit.list({ limit: 10 })).toEqual([first])
        }))

      test("a delivery retry and its entry commit together", () =>
        Effect.gen(function*() {
          const audit = yield* AuditLog
          const deliveries = yield* WebhookDeliveryRepo
          const owner = yield* createAccount(1_000_000)
          const j = job(owner.id, { webhookUrl: "https://receiver.genjobs.test/hook" })
          yield* submit(j)
          yield* Effect.flatMap(JobRepo, (jobs) => jobs.fail(j.id, null, { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, T0 + 1))
          const claimed = (yield* deliveries.claimDue({ workerId: "d", now: T0 + 10, leaseMs: 60_000, maxPerAccount: 4, limit: 1 }))[0]!
          const attempt = { attempt: 1, at: T0 + 10, statusCode: 500, error: "HTTP 500", durationMs: 5, responseBody: null }
          yield* deliveries.recordAttempt(claimed.id, "d", attempt, { status: "failed" })
          const first = entry({ action: "delivery.retry", target: claimed.id })
          yield* audit.recorded(Effect.void, () => first)
          const refused = yield* Effect.exit(audit.recorded(deliveries.retry(claimed.id, T0 + 20), () => first))
          expect(Exit.isFailure(refused)).toBe(true)
          expect(Option.getOrThrow(yield* deliveries.get(claimed.id)).status).toBe("failed")
          const second = entry({ action: "delivery.retry", target: claimed.id })
          const retried = yield* audit.recorded(deliveries.retry(claimed.id, T0 + 30), () => second)
          expect(Option.getOrThrow(retried).status).toBe("pending")
          const ids = (yield* audit.list({ limit: 10, action: "delivery.retry" })).map((e) => e.id)
          expect(new Set(ids)).toEqual(new Set([first.id, second.id]))
        }))
    }
  })
}
