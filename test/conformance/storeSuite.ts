import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option, Result } from "effect"
import type { AccountId, ApiKeyId, JobId } from "../../src/domain/ids.js"
import type { AnyRefusal } from "../../src/domain/refusal.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import type { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { claimedJob, type Job } from "../../src/domain/job.js"
import { JobRepo, type SubmitCommand } from "../../src/ports/JobRepo.js"
import { RetentionRepo } from "../../src/ports/RetentionRepo.js"
import { retainedStatuses, unsentDeliveries } from "../../src/domain/retention.js"
import { UploadRepo } from "../../src/ports/UploadRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { createAccount, emptyCatalog, job, NO_LIMITS, sampleCatalog, T0 } from "./fixtures.js"
import { runBudgetConformance } from "./budgetSuite.js"
import { runChangesConformance } from "./changesSuite.js"
import type { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import { runLimitsConformance } from "./limitsSuite.js"
import { runFairConformance } from "./fairSuite.js"
import { runJobLogsConformance } from "./jobLogsSuite.js"
import { runRidingClaimsConformance } from "./ridingClaimsSuite.js"
import { runHandBackConformance } from "./handBackSuite.js"
import { runReturnUnstartedConformance } from "./returnUnstartedSuite.js"
import type { JobLogRepo } from "../../src/ports/JobLogRepo.js"

export type Stores = AccountRepo | ApiKeyRepo | JobRepo | CatalogRepo | WebhookDeliveryRepo | UploadRepo | RetentionRepo | AdminReadRepo | JobLogRepo
  | ChangeFeed

const codeOf = <A>(result: Result.Result<A, unknown>) =>
  Result.isFailure(result) ? (result.failure as AnyRefusal).code : "ok"

const balanceAndLedger = (id: AccountId) =>
  Effect.gen(function*() {
    const repo = yield* AccountRepo
    const account = Option.getOrThrow(yield* repo.get(id))
    const entries = yield* repo.ledger(id)
    return { balance: account.balanceMicroCents, sum: entries.reduce((s, e) => s + e.amountMicroCents, 0), entries }
  })

/**
 * The behaviour every store adapter must share. `makeLayer` builds a fresh, empty store for
 * each test.
 */
export const runStoreConformance = (name: string, makeLayer: () => Layer.Layer<Stores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, Stores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  runLimitsConformance(name, makeLayer)
  runBudgetConformance(name, makeLayer)
  runFairConformance(name, makeLayer)
  runJobLogsConformance(name, makeLayer)
  runChangesConformance(name, makeLayer)
  runRidingClaimsConformance(name, makeLayer)
  runHandBackConformance(name, makeLayer)
  runReturnUnstartedConformance(name, makeLayer)

  // Whether the store's write itself woke the claimers (SubmitOutcome's `claimersWoken`) is each
  // adapter's own (PostgreSQL's plain submits do): these tests hold what every store answers.
  const submit = (command: Partial<SubmitCommand> & Pick<SubmitCommand, "job">) =>
    Effect.flatMap(JobRepo, (repo) =>
      repo.submit({ maxConcurrentJobs: 100, rateLimits: NO_LIMITS, ...command }).pipe(
        Effect.map((outcome) => outcome._tag === "Created" ? { _tag: outcome._tag, job: outcome.job } : outcome),
        Effect.result
      ))

  describe(`${name}: AccountRepo`, () => {
    test("creates an account with its opening credit in the ledger", () =>
      Effect.gen(function*() {
        const repo = yield* AccountRepo
        const created = yield* createAccount(5_000, { name: "Acme", segments: ["pro"], discounts: [{ type: "vip", percentage: 12.5 }] })
        expect(created).toMatchObject({ name: "Acme", balanceMicroCents: 5_000, segments: ["pro"] })
        expect(Option.getOrThrow(yield* repo.get(created.id))).toEqual(created)
        const { entries, sum } = yield* balanceAndLedger(created.id)
        expect(entries.map((e) => [e.kind, e.amountMicroCents, e.jobId])).toEqual([["credit", 5_000, null]])
        expect(sum).toBe(5_000)
        expect(yield* repo.count).toBe(1)
      }))

    test("adds credits through the ledger; unknown accounts are None", () =>
      Effect.gen(function*() {
        const repo = yield* AccountRepo
        const created = yield* createAccount(0)
        expect((yield* repo.ledger(created.id))).toEqual([])
        const updated = yield* repo.addCredits(created.id, 700, T0 + 1)
        expect(Option.getOrThrow(updated).balanceMicroCents).toBe(700)
        expect(Option.isNone(yield* repo.addCredits("acc_missing" as AccountId, 1, T0))).toBe(true)
        expect(Option.isNone(yield* repo.get("acc_missing" as AccountId))).toBe(true)
        const { balance, sum } = yield* balanceAndLedger(created.id)
        expect(sum).toBe(balance)
      }))

    test("counts the account's pending and processing jobs only", () =>
      Effect.gen(function*() {
        const accounts = yield* AccountRepo
        const jobs = yield* JobRepo
        const owner = yield* createAccount(100_000)
        const other = yield* createAccount(100_000)
        expect(yield* accounts.activeJobs(owner.id)).toBe(0)
        const [done, running, cancelled, pending] = [0, 1, 2, 3].map((i) => job(owner.id, { createdAt: T0 + i }))
        for (const j of [done!, running!, cancelled!, pending!]) yield* submit({ job: j })
        yield* submit({ job: job(other.id, { createdAt: T0 + 9 }) })
        yield* jobs.claim({ workerId: "w", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3 })
        yield* jobs.claim({ workerId: "w", now: T0 + 10, leaseMs: 60_000, maxAttempts: 3 })
        yield* jobs.complete(done!.id, "w", [], T0 + 20)
        yield* jobs.cancel(cancelled!.id, owner.id, T0 + 20)
        expect(yield* accounts.activeJobs(owner.id)).toBe(2)
        expect(yield* accounts.activeJobs(other.id)).toBe(1)
      }))
  })

  describe(`${name}: webhook secrets`, () => {
    test("rotates the secret and keeps the previous one with its expiry", () =>
      Effect.gen(function*() {
        const repo = yield* AccountRepo
        const created = yield* createAccount(0, { webhookSecret: "whsec_old" })
        const rotated = Option.getOrThrow(yield* repo.rotateWebhookSecret(created.id, "whsec_new", T0 + 60_000))
        expect(rotated).toMatchObject({ webhookSecret: "whsec_new", previousWebhookSecret: "whsec_old", previousWebhookSecretExpiresAt: T0 + 60_000 })
        expect(Option.getOrThrow(yield* repo.get(created.id))).toEqual(rotated)
        expect(Option.isNone(yield* repo.rotateWebhookSecret("acc_missing" as AccountId, "x", T0))).toBe(true)
      }))
  })

  describe(`${name}: ApiKeyRepo`, () => {
    test("finds keys by hash and deactivates them", () =>
      Effect.gen(function*() {
        const repo = yield* ApiKeyRepo
        const owner = yield* createAccount(0)
        const key = {
          id: "key_1" as ApiKeyId,
          accountId: owner.id,
          name: "k",
          scopes: ["submit_job", "check_status"] as const,
          allowedIPs: ["10.0.0.0/8", "::1"],
          hash: "a".repeat(64),
          hint: "gjk_abcd",
          active: true,
          expiresAt: T0 + 1000,
          budget: { limitMicroCents: 500, period: "day" as const },
          createdAt: T0
        }
        yield* repo.create(key)
        expect(Option.getOrThrow(yield* repo.findByHash("a".repeat(64)))).toEqual(key)
        expect(Option.isNone(yield* repo.findByHash("b".repeat(64)))).toBe(true)
        expect(Option.getOrThrow(yield* repo.deactivate(key.id))).toEqual({ ...key, active: false })
        expect(Option.getOrThrow(yield* repo.findByHash("a".repeat(64))).active).toBe(false)
        expect(Option.isNone(yield* repo.deactivate("key_missing" as ApiKeyId))).toBe(true)
      }))

    test("reads a key with its account in one call, deactivation included", () =>
      Effect.gen(function*() {
        const repo = yield* ApiKeyRepo
        const owner = yield* createAccount(5_000, { segments: ["beta"], discounts: [{ type: "volume", percentage: 10 }] })
        const key = {
          id: "key_2" as ApiKeyId,
          accountId: owner.id,
          name: "k",
          scopes: [] as const,
          allowedIPs: [],
          hash: "c".repeat(64),
          hint: "gjk_cdef",
          active: true,
          expiresAt: null,
          createdAt: T0
        }
        yield* repo.create(key)
        const findWithAccount = repo.findWithAccount!
        expect(Option.getOrThrow(yield* findWithAccount("c".repeat(64)))).toEqual({
          key,
          account: yield* Effect.flatMap(AccountRepo, (accounts) => accounts.get(owner.id))
        })
        expect(Option.isNone(yield* findWithAccount("d".repeat(64)))).toBe(true)
        yield* repo.deactivate(key.id)
        expect(Option.getOrThrow(yield* findWithAccount("c".repeat(64))).key.active).toBe(false)
      }))
  })

  describe(`${name}: CatalogRepo`, () => {
    test("starts empty and round-trips documents with a growing revision", () =>
      Effect.gen(function*() {
        const repo = yield* CatalogRepo
        expect(yield* repo.load).toEqual({ document: emptyCatalog, revision: 0 })
        expect(yield* repo.revision).toBe(0)
        const doc = sampleCatalog()
        expect(Option.getOrThrow(yield* repo.replace(doc)).revision).toBe(1)
        expect(yield* repo.load).toEqual({ document: doc, revision: 1 })
        const smaller = { ...doc, models: doc.models.slice(0, 1) }
        yield* repo.replace(smaller)
        expect(yield* repo.load).toEqual({ document: smaller, revision: 2 })
        expect(yield* repo.revision).toBe(2)
      }))

    test("replaces only at the revision asked for, and changes nothing otherwise", () =>
      Effect.gen(function*() {
        const repo = yield* CatalogRepo
        const doc = sampleCatalog()
        const smaller = { ...doc, models: doc.models.slice(0, 1) }
        // Nothing stored yet is revision 0.
        expect(Option.isNone(yield* repo.replace(doc, 1))).toBe(true)
        expect(yield* repo.load).toEqual({ document: emptyCatalog, revision: 0 })
        expect(Option.getOrThrow(yield* repo.replace(doc, 0))).toEqual({ document: doc, revision: 1 })
        expect(Option.isNone(yield* repo.replace(smaller, 0))).toBe(true)
        expect(Option.getOrThrow(yield* repo.replace(smaller, 1))).toEqual({ document: smaller, revision: 2 })
        // Two replaces made against one revision: the second is refused.
        expect(Option.isNone(yield* repo.replace(doc, 1))).toBe(true)
        expect(Option.isNone(yield* repo.replace(doc, 3))).toBe(true)
        expect(yield* repo.load).toEqual({ document: smaller, revision: 2 })
        // At the same time (on PostgreSQL over two connections): exactly one of them is stored.
        const racing = yield* Effect.all([repo.replace(doc, 2), repo.replace(smaller, 2)], { concurrency: 2 })
        expect(racing.filter(Option.isSome)).toHaveLength(1)
        expect((yield* repo.load).revision).toBe(3)
      }))
  })

  /** An idle local worker's lease, as LocalWorkers offers it with a submit. */
  const handOffLease = (leaseOwner: string, now: number) => ({ now, leaseOwner, leaseExpiresAt: now + 1_000, maxAttempts: 2 })

  describe(`${name}: JobRepo submit`, () => {
    test("stores the job exactly and charges it through the ledger", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id, { webhookUrl: "https://receiver.genjobs.test/h" })
        expect(yield* submit({ job: j })).toEqual(Result.succeed({ _tag: "Created", job: j }))
        expect(Option.getOrThrow(yield* repo.get(j.id))).toEqual(j)
        const { balance, entries, sum } = yield* balanceAndLedger(owner.id)
        expect(balance).toBe(9_000)
        expect(entries.filter((e) => e.kind === "charge").map((e) => [e.amountMicroCents, e.jobId])).toEqual([[-1_000, j.id]])
        expect(sum).toBe(balance)
      }))

    test("a submit offered to an idle local worker is written as its claim when nothing older is runnable", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const accounts = yield* AccountRepo
        const owner = yield* createAccount(100_000)
        const offered = handOffLease
        const first = job(owner.id, { createdAt: T0 })
        const handed = yield* submit({ job: first, handOff: offered("w1", T0 + 5) })
        const claimedFirst = claimedJob(first, handOffLease("w1", T0 + 5))
        expect(handed).toEqual(Result.succeed({ _tag: "Created", job: claimedFirst }))
        expect(Option.getOrThrow(yield* repo.get(first.id))).toEqual(claimedFirst)
        // Counted active like any claimed job, and no other worker can take it.
        expect(yield* accounts.activeJobs(owner.id)).toBe(1)
        expect(yield* repo.claimBatch({ workerId: "w9", now: T0 + 6, leaseMs: 1_000, maxAttempts: 2, limit: 5 })).toEqual([])
        // A queued job is older: the next offered submit waits behind it, and wakes claimers.
        const queued = job(owner.id, { createdAt: T0 + 10 })
        yield* submit({ job: queued })
        // Its fair key follows the account's last pending one (src/domain/fairShare.ts).
        const behind = job(owner.id, { createdAt: T0 + 20 })
        expect(yield* submit({ job: behind, handOff: offered("w2", T0 + 25) }))
          .toEqual(Result.succeed({ _tag: "Created", job: { ...behind, fairKey: 1_000_000 } }))
        const next = yield* repo.claimBatch({ workerId: "w3", now: T0 + 30, leaseMs: 1_000, maxAttempts: 2, limit: 5 })
        expect(next.map((j) => j.id)).toEqual([queued.id, behind.id])
        // An expired lease that can still be claimed is runnable too.
        const late = job(owner.id, { createdAt: T0 + 40 })
        expect(yield* submit({ job: late, handOff: offered("w4", T0 + 2_000) })).toEqual(Result.succeed({ _tag: "Created", job: late }))
        // A refused submit writes nothing, offered or not.
        const full = yield* submit({ job: job(owner.id, { createdAt: T0 + 50 }), handOff: offered("w5", T0 + 55), maxConcurrentJobs: 4 })
        expect(codeOf(full)).toBe("CONCURRENT_JOBS_EXCEEDED")
        expect(yield* accounts.activeJobs(owner.id)).toBe(4)
        const { balance, sum } = yield* balanceAndLedger(owner.id)
        expect([balance, sum]).toEqual([96_000, 96_000])
      }))

    test("a submit decided in a transaction (idempotency key, rate limits) is handed off the same way", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(100_000)
        const offered = handOffLease
        const idempotency = { key: "k1", requestHash: "h1", notBefore: T0 - 86_400_000 }
        const keyed = job(owner.id, { createdAt: T0 })
        const claimedKeyed = claimedJob(keyed, handOffLease("w1", T0 + 1))
        expect(yield* submit({ job: keyed, idempotency, handOff: offered("w1", T0 + 1) }))
          .toEqual(Result.succeed({ _tag: "Created", job: claimedKeyed }))
        // Its replay answers the job as it now is, and writes nothing.
        expect(yield* submit({ job: job(owner.id, { createdAt: T0 + 2 }), idempotency, handOff: offered("w2", T0 + 2) }))
          .toEqual(Result.succeed({ _tag: "Replayed", job: claimedKeyed }))
        const limits = { requestsPerMinute: 10, requestsPerDay: 100 }
        const limited = job(owner.id, { createdAt: T0 + 3 })
        expect(yield* submit({ job: limited, rateLimits: limits, handOff: offered("w3", T0 + 4) }))
          .toEqual(Result.succeed({ _tag: "Created", job: claimedJob(limited, handOffLease("w3", T0 + 4)) }))
        const queued = job(owner.id, { createdAt: T0 + 5 })
        yield* submit({ job: queued, rateLimits: limits })
        const behind = job(owner.id, { createdAt: T0 + 6 })
        expect(yield* submit({ job: behind, rateLimits: limits, handOff: offered("w4", T0 + 7) }))
          .toEqual(Result.succeed({ _tag: "Created", job: { ...behind, fairKey: 1_000_000 } }))
        expect((yield* repo.claimBatch({ workerId: "w5", now: T0 + 8, leaseMs: 1_000, maxAttempts: 2, limit: 5 })).map((j) => j.id))
          .toEqual([queued.id, behind.id])
        const { balance, sum } = yield* balanceAndLedger(owner.id)
        expect([balance, sum]).toEqual([96_000, 96_000])
      }))

    test("refuses without writing anything: balance, concurrency, rate limits", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const poor = yield* createAccount(999)
        expect(codeOf(yield* submit({ job: job(poor.id) }))).toBe("INSUFFICIENT_BALANCE")
        const busy = yield* createAccount(100_000)
        yield* submit({ job: job(busy.id), maxConcurrentJobs: 1 })
        expect(codeOf(yield* submit({ job: job(busy.id), maxConcurrentJobs: 1 }))).toBe("CONCURRENT_JOBS_EXCEEDED")
        const limited = yield* createAccount(100_000)
        const limits = { requestsPerMinute: 2, requestsPerDay: 3 }
        yield* submit({ job: job(limited.id, { createdAt: T0 }), rateLimits: limits })
        yield* submit({ job: job(limited.id, { createdAt: T0 + 10_000 }), rateLimits: limits })
        const refused = yield* submit({ job: job(limited.id, { createdAt: T0 + 20_000 }), rateLimits: limits })
        expect(codeOf(refused)).toBe("RATE_LIMIT_EXCEEDED")
        expect(Result.isFailure(refused) && (refused.failure as AnyRefusal).retryAfterSeconds).toBe(40)
        // The minute window slides: the first job leaves it after 60 s.
        expect(codeOf(yield* submit({ job: job(limited.id, { createdAt: T0 + 60_001 }), rateLimits: limits }))).toBe("ok")
        // The day window still holds three.
        const daily = yield* submit({ job: job(limited.id, { createdAt: T0 + 200_000 }), rateLimits: limits })
        expect(codeOf(daily)).toBe("RATE_LIMIT_EXCEEDED")
        expect(Result.isFailure(daily) && (daily.failure as AnyRefusal).retryAfterSeconds).toBe(86_400 - 200)
        // Another version has its own allowance; a limit of 0 is none.
        expect(codeOf(yield* submit({ job: job(limited.id, { createdAt: T0 + 200_000, version: "v2" }), rateLimits: limits }))).toBe("ok")
        for (const who of [poor, busy, limited]) {
          const { balance, sum } = yield* balanceAndLedger(who.id)
          expect(sum).toBe(balance)
        }
        expect((yield* repo.list({ accountId: poor.id, limit: 10 }))).toEqual([])
        expect((yield* repo.list({ accountId: busy.id, limit: 10 }))).toHaveLength(1)
        expect((yield* repo.list({ accountId: limited.id, limit: 10 }))).toHaveLength(4)
      }))

    test("replays an idempotency key, refuses it with another body, forgets it after the window", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(10_000)
        const idem = { key: "k1", requestHash: "h1", notBefore: T0 - 1 }
        const first = job(owner.id)
        expect(yield* submit({ job: first, idempotency: idem })).toEqual(Result.succeed({ _tag: "Created", job: first }))
        expect(yield* submit({ job: job(owner.id), idempotency: idem })).toEqual(Result.succeed({ _tag: "Replayed", job: first }))
        expect(codeOf(yield* submit({ job: job(owner.id), idempotency: { ...idem, requestHash: "h2" } }))).toBe("IDEMPOTENCY_KEY_REUSED")
        const later = job(owner.id, { createdAt: T0 + 1000 })
        const expired = yield* submit({ job: later, idempotency: { ...idem, requestHash: "h2", notBefore: T0 + 1 } })
        expect(expired).toEqual(Result.succeed({ _tag: "Created", job: { ...later, fairKey: 1_000_000 } }))
        const other = yield* createAccount(10_000)
        expect(Result.getOrThrow(yield* submit({ job: job(other.id), idempotency: idem }))._tag).toBe("Created")
        expect((yield* balanceAndLedger(owner.id)).balance).toBe(8_000)
      }))

    test("a zero-cost job writes no ledger line", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(0)
        const free = job(owner.id, { costMicroCents: 0 })
        expect(codeOf(yield* submit({ job: free }))).toBe("ok")
        yield* Effect.flatMap(JobRepo, (repo) => repo.cancel(free.id, owner.id, T0))
        expect((yield* balanceAndLedger(owner.id)).entries).toEqual([])
      }))

    test("a job that ends, however it ends, frees its place; a refused submit takes none", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(5_000)
        const lease = { leaseMs: 60_000, maxAttempts: 3 }
        const at = (i: number) => job(owner.id, { createdAt: T0 + i })
        const admit = (j: ReturnType<typeof at>) => Effect.map(submit({ job: j, maxConcurrentJobs: 2 }), codeOf)
        const [a, b, c, d, e, f] = [0, 1, 2, 3, 4, 5].map(at)
        expect([yield* admit(a!), yield* admit(b!), yield* admit(c!)]).toEqual(["ok", "ok", "CONCURRENT_JOBS_EXCEEDED"])
        yield* repo.cancel(a!.id, owner.id, T0 + 10)
        expect(yield* admit(c!)).toBe("ok")
        const running = Option.getOrThrow(yield* repo.claim({ workerId: "w1", now: T0 + 20, ...lease }))
        expect(running.id).toBe(b!.id)
        yield* repo.complete(b!.id, "w1", [], T0 + 21)
        expect(yield* admit(d!)).toBe("ok")
        yield* repo.claim({ workerId: "w2", now: T0 + 30, ...lease })
        yield* repo.fail(c!.id, "w2", { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, T0 + 31)
        // Refused for its price after the failure's end was written: that end must still count.
        expect(codeOf(yield* submit({ job: job(owner.id, { costMicroCents: 50_000 }), maxConcurrentJobs: 2 }))).toBe("INSUFFICIENT_BALANCE")
        expect([yield* admit(e!), yield* admit(f!)]).toEqual(["ok", "CONCURRENT_JOBS_EXCEEDED"])
        expect((yield* repo.list({ accountId: owner.id, limit: 10, status: "pending" })).map((j) => j.id).sort()).toEqual([d!.id, e!.id].sort())
        const { balance, sum } = yield* balanceAndLedger(owner.id)
        expect([balance, sum]).toEqual([2_000, 2_000])
      }))

    test("parallel submits never overshoot the concurrency maximum or the balance", () =>
      Effect.gen(function*() {
        const capped = yield* createAccount(100_000)
        const byConcurrency = yield* Effect.all(
          Array.from({ length: 12 }, () => submit({ job: job(capped.id), maxConcurrentJobs: 5 })),
          { concurrency: "unbounded" }
        )
        expect(byConcurrency.filter(Result.isSuccess)).toHaveLength(5)
        const broke = yield* createAccount(3_500)
        const byBalance = yield* Effect.all(
          Array.from({ length: 12 }, () => submit({ job: job(broke.id) })),
          { concurrency: "unbounded" }
        )
        expect(byBalance.filter(Result.isSuccess)).toHaveLength(3)
        const { balance, sum } = yield* balanceAndLedger(broke.id)
        expect(balance).toBe(500)
        expect(sum).toBe(balance)
      }))
  })

  describe(`${name}: JobRepo list`, () => {
    test("getMany reads the jobs of many ids in one go, exactly as get does, skipping ids it does not hold", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(1_000_000)
        // Each a step after the one before in the fair order: the stored key, as get reads it.
        const made = Array.from({ length: 5 }, (_, i) => job(owner.id, { fairKey: i * 1_000_000 }))
        for (const j of made) yield* submit({ job: j })
        const ids = [made[3]!.id, made[0]!.id, "job_missing" as JobId, made[4]!.id]
        const read = yield* repo.getMany(ids)
        const byId = (a: Job, b: Job) => (a.id < b.id ? -1 : 1)
        expect([...read].sort(byId)).toEqual([made[0]!, made[3]!, made[4]!].sort(byId))
        expect(yield* repo.getMany([])).toEqual([])
      }))

    test("pages newest first over (createdAt, id) without misses or repeats when jobs arrive between pages", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(1_000_000)
        const made = Array.from({ length: 9 }, (_, i) => job(owner.id, { createdAt: T0 + Math.floor(i / 3) }))
        for (const j of made) yield* submit({ job: j })
        const expected = [...made].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((j) => j.id)
        const seen: Array<string> = []
        let after: { createdAt: number; id: string } | undefined
        for (let page = 0; page < 10; page++) {
          const rows = yield* repo.list({ accountId: owner.id, limit: 2, ...(after === undefined ? {} : { after }) })
          expect(rows.length).toBeLessThanOrEqual(3)
          const shown = rows.slice(0, 2)
          seen.push(...shown.map((j) => j.id))
          yield* submit({ job: job(owner.id, { createdAt: T0 + 100 + page }) })
          if (rows.length <= 2) break
          after = { createdAt: shown[1]!.createdAt, id: shown[1]!.id }
        }
        expect(seen).toEqual(expected)
      }))

    test("pages a filtered list over jobs sharing created_at exactly: each once, newest first, by id within a time", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(1_000_000)
        // Four jobs to each time, two models alternating; the cancelled ones are every third.
        const made = Array.from({ length: 16 }, (_, i) => job(owner.id, { createdAt: T0 + Math.floor(i / 4), model: i % 2 === 0 ? "m/a" : "m/b" }))
        for (const j of made) yield* submit({ job: j })
        const cancelled = made.filter((_, i) => i % 3 === 0)
        for (const j of cancelled) yield* repo.cancel(j.id, owner.id, T0 + 100)
        const newestFirst = (jobs: ReadonlyArray<Job>) =>
          [...jobs].sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1)).map((j) => j.id)
        const paged = (filter: { readonly status?: "cancelled"; readonly model?: string }) =>
          Effect.gen(function*() {
            const seen: Array<string> = []
            let after: { createdAt: number; id: string } | undefined
            for (let page = 0; page < 20; page++) {
              const rows = yield* repo.list({ accountId: owner.id, limit: 3, ...filter, ...(after === undefined ? {} : { after }) })
              seen.push(...rows.slice(0, 3).map((j) => j.id))
              if (rows.length <= 3) return seen
              after = { createdAt: rows[2]!.createdAt, id: rows[2]!.id }
            }
            return seen
          })
        expect(yield* paged({})).toEqual(newestFirst(made))
        expect(yield* paged({ model: "m/a" })).toEqual(newestFirst(made.filter((j) => j.model === "m/a")))
        expect(yield* paged({ status: "cancelled" })).toEqual(newestFirst(cancelled))
        expect(yield* paged({ status: "cancelled", model: "m/b" })).toEqual(newestFirst(cancelled.filter((j) => j.model === "m/b")))
      }))

    test("filters by status and model, and never shows other accounts' jobs", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(1_000_000)
        const other = yield* createAccount(1_000_000)
        const a = job(owner.id, { model: "m/a" })
        const b = job(owner.id, { model: "m/b", createdAt: T0 + 1 })
        yield* submit({ job: a })
        yield* submit({ job: b })
        yield* submit({ job: job(other.id, { model: "m/a" }) })
        yield* repo.cancel(a.id, owner.id, T0 + 2)
        expect((yield* repo.list({ accountId: owner.id, limit: 10, status: "cancelled" })).map((j) => j.id)).toEqual([a.id])
        expect((yield* repo.list({ accountId: owner.id, limit: 10, model: "m/b" })).map((j) => j.id)).toEqual([b.id])
        expect((yield* repo.list({ accountId: owner.id, limit: 10 })).map((j) => j.id)).toEqual([b.id, a.id])
      }))
  })

  describe(`${name}: JobRepo cancel`, () => {
    test("charges and refunds jobs of 2^40 micro-cents exactly, on the one-statement and the transaction paths", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const big = 2 ** 40
        const credit = 2 ** 42 + 7
        const owner = yield* createAccount(credit)
        const once = job(owner.id, { costMicroCents: big })
        const keyed = job(owner.id, { costMicroCents: big + 1, createdAt: T0 + 1 })
        expect(Result.isSuccess(yield* submit({ job: once }))).toBe(true)
        expect(Result.isSuccess(yield* submit({ job: keyed, idempotency: { key: "big", requestHash: "h", notBefore: 0 } }))).toBe(true)
        expect((yield* balanceAndLedger(owner.id)).balance).toBe(credit - 2 * big - 1)
        expect((yield* repo.cancel(once.id, owner.id, T0 + 2)).refundedMicroCents).toBe(big)
        yield* repo.claim({ workerId: "w", now: T0 + 3, leaseMs: 1000, maxAttempts: 3 })
        expect(Option.isSome(yield* repo.fail(keyed.id, "w", { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, T0 + 4))).toBe(true)
        const { balance, entries, sum } = yield* balanceAndLedger(owner.id)
        expect(balance).toBe(credit)
        expect(sum).toBe(balance)
        expect(entries.filter((e) => e.jobId !== null).map((e) => e.amountMicroCents).sort((a, b) => a - b)).toEqual([-big - 1, -big, big, big + 1])
      }))

    test("cancels pending jobs with a refund of what was charged, and only those", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const stranger = yield* createAccount(0)
        const j = job(owner.id, { costMicroCents: 1_234 })
        yield* submit({ job: j })
        expect(codeOf(yield* Effect.result(repo.cancel(j.id, stranger.id, T0)))).toBe("UNAUTHORIZED_ACCESS")
        expect(codeOf(yield* Effect.result(repo.cancel("job_missing" as never, owner.id, T0)))).toBe("JOB_NOT_FOUND")
        const outcome = yield* repo.cancel(j.id, owner.id, T0 + 5)
        expect(outcome).toEqual({ job: { ...j, status: "cancelled", completedAt: T0 + 5 }, refundedMicroCents: 1_234 })
        expect(codeOf(yield* Effect.result(repo.cancel(j.id, owner.id, T0 + 6)))).toBe("JOB_CANNOT_BE_CANCELLED")
        const { balance, sum } = yield* balanceAndLedger(owner.id)
        expect(balance).toBe(10_000)
        expect(sum).toBe(balance)
        const running = job(owner.id, { createdAt: T0 + 10 })
        yield* submit({ job: running })
        yield* repo.claim({ workerId: "w", now: T0 + 11, leaseMs: 1000, maxAttempts: 3 })
        expect(codeOf(yield* Effect.result(repo.cancel(running.id, owner.id, T0 + 12)))).toBe("JOB_CANNOT_BE_CANCELLED")
      }))

    test("parallel cancels of one job refund it once", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id)
        yield* submit({ job: j })
        const results = yield* Effect.all(Array.from({ length: 8 }, () => Effect.result(repo.cancel(j.id, owner.id, T0 + 1))), {
          concurrency: "unbounded"
        })
        expect(results.filter(Result.isSuccess)).toHaveLength(1)
        const { balance, entries } = yield* balanceAndLedger(owner.id)
        expect(balance).toBe(10_000)
        expect(entries.filter((e) => e.kind === "refund")).toHaveLength(1)
      }))
  })

  describe(`${name}: JobRepo queue`, () => {
    test("claims an account's first submitted pending job with a lease, once", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        // Within an account, first in, first out: the order of submits, whatever the jobs' times.
        const firstIn = job(owner.id, { createdAt: T0 + 1 })
        const secondIn = job(owner.id, { createdAt: T0, fairKey: 1_000_000 })
        yield* submit({ job: firstIn })
        yield* submit({ job: secondIn })
        const first = Option.getOrThrow(yield* repo.claim({ workerId: "w1", now: T0 + 10, leaseMs: 1_000, maxAttempts: 3 }))
        // A first pickup records the provider start as begun (claimedJob).
        expect(first).toEqual({
          ...firstIn,
          status: "processing",
          attempts: 1,
          startedAt: T0 + 10,
          leaseOwner: "w1",
          leaseExpiresAt: T0 + 1_010,
          providerPhase: "starting",
          providerStarts: 1
        })
        expect(Option.getOrThrow(yield* repo.claim({ workerId: "w2", now: T0 + 10, leaseMs: 1_000, maxAttempts: 3 })).id).toBe(secondIn.id)
        expect(Option.isNone(yield* repo.claim({ workerId: "w3", now: T0 + 10, leaseMs: 1_000, maxAttempts: 3 }))).toBe(true)
      }))

    test("parallel claims hand each job to one worker", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(100_000)
        for (let i = 0; i < 5; i++) yield* submit({ job: job(owner.id, { createdAt: T0 + i }) })
        const claims = yield* Effect.all(
          Array.from({ length: 10 }, (_, i) => repo.claim({ workerId: `w${i}`, now: T0 + 10, leaseMs: 1_000, maxAttempts: 3 })),
          { concurrency: "unbounded" }
        )
        const ids = claims.filter(Option.isSome).map((c) => c.value.id)
        expect(ids).toHaveLength(5)
        expect(new Set(ids).size).toBe(5)
      }))

    test("takes over an expired lease; only the lease holder renews, completes or fails", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id)
        yield* submit({ job: j })
        yield* repo.claim({ workerId: "dead", now: T0, leaseMs: 1_000, maxAttempts: 3 })
        expect(Option.isNone(yield* repo.claim({ workerId: "w2", now: T0 + 999, leaseMs: 1_000, maxAttempts: 3 }))).toBe(true)
        const renew = (workerId: string, now: number) => repo.renewLeases([{ id: j.id, workerId }], now, 4_000)
        expect(yield* renew("w2", T0 + 1_000)).toEqual([])
        const taken = Option.getOrThrow(yield* repo.claim({ workerId: "w2", now: T0 + 1_000, leaseMs: 1_000, maxAttempts: 3 }))
        expect(taken).toMatchObject({ status: "processing", attempts: 2, leaseOwner: "w2", startedAt: T0 })
        expect(yield* renew("dead", T0 + 5_000)).toEqual([])
        expect(yield* renew("w2", T0 + 5_000)).toEqual([j.id])
        expect(Option.isNone(yield* repo.claim({ workerId: "w3", now: T0 + 5_000, leaseMs: 1_000, maxAttempts: 3 }))).toBe(true)
        const output = { url: "http://f/1.png", type: "image" as const, metadata: { width: 1 } }
        expect(Option.isNone(yield* repo.complete(j.id, "dead", [output], T0 + 6_000))).toBe(true)
        expect(Option.isNone(yield* repo.fail(j.id, "dead", { code: "GENERATION_FAILED", message: "x", type: "input_rejected", retryable: false }, T0 + 6_000))).toBe(true)
        const done = Option.getOrThrow(yield* repo.complete(j.id, "w2", [output], T0 + 6_000))
        expect(done).toMatchObject({ status: "completed", outputs: [output], completedAt: T0 + 6_000, leaseOwner: null, leaseExpiresAt: null })
        expect(Option.getOrThrow(yield* repo.get(j.id))).toEqual(done)
        expect(Option.isNone(yield* repo.complete(j.id, "w2", [output], T0 + 7_000))).toBe(true)
        expect((yield* balanceAndLedger(owner.id)).balance).toBe(9_000)
      }))

    test("fails a job whose attempts are used up, with a refund", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id)
        yield* submit({ job: j })
        yield* repo.claim({ workerId: "a", now: T0, leaseMs: 1_000, maxAttempts: 2 })
        yield* repo.claim({ workerId: "b", now: T0 + 1_000, leaseMs: 1_000, maxAttempts: 2 })
        // Its last attempt's lease expired: claimers leave it to the reaper.
        expect(Option.isNone(yield* repo.claim({ workerId: "c", now: T0 + 2_000, leaseMs: 1_000, maxAttempts: 2 }))).toBe(true)
        expect(Option.getOrThrow(yield* repo.get(j.id)).status).toBe("processing")
        const reap = (workerId: string, now: number) => repo.reap({ workerId, now, passMs: 5_000, maxAttempts: 2, limit: 100 })
        expect(yield* reap("r1", T0 + 1_999)).toBe(0)
        // r1 holds the pass until T0 + 6_999: r2 finds it taken.
        expect(yield* reap("r2", T0 + 2_000)).toBe(0)
        expect(yield* reap("r1", T0 + 2_000)).toBe(1)
        expect(Option.getOrThrow(yield* repo.get(j.id))).toMatchObject({
          status: "failed",
          attempts: 2,
          error: { code: "INTERNAL_ERROR" },
          completedAt: T0 + 2_000
        })
        expect((yield* balanceAndLedger(owner.id)).balance).toBe(10_000)
      }))

    test("fail refunds exactly once; abandoning a pending job refunds it", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id)
        yield* submit({ job: j })
        yield* repo.claim({ workerId: "w", now: T0, leaseMs: 1_000, maxAttempts: 3 })
        const error = { code: "GENERATION_FAILED" as const, message: "nope", type: "input_rejected" as const, retryable: false }
        const failed = Option.getOrThrow(yield* repo.fail(j.id, "w", error, T0 + 1))
        expect(failed).toMatchObject({ status: "failed", error, completedAt: T0 + 1 })
        expect(Option.isNone(yield* repo.fail(j.id, "w", error, T0 + 2))).toBe(true)
        expect(Option.isNone(yield* repo.fail(j.id, null, error, T0 + 2))).toBe(true)
        const pending = job(owner.id)
        yield* submit({ job: pending })
        expect(Option.getOrThrow(yield* repo.fail(pending.id, null, error, T0 + 3)).status).toBe("failed")
        const { balance, entries, sum } = yield* balanceAndLedger(owner.id)
        expect(balance).toBe(10_000)
        expect(sum).toBe(balance)
        expect(entries.filter((e) => e.kind === "refund").map((e) => e.jobId).sort()).toEqual([j.id, pending.id].sort())
      }))

    test("a failure's type and retryability are stored with the job and read back as written (issue 38)", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id)
        yield* submit({ job: j })
        yield* repo.claim({ workerId: "w", now: T0, leaseMs: 1_000, maxAttempts: 3 })
        const error = { code: "GENERATION_FAILED" as const, message: "slow down", type: "rate_limited" as const, retryable: true }
        yield* repo.fail(j.id, "w", error, T0 + 1)
        expect(Option.getOrThrow(yield* repo.get(j.id)).error).toEqual(error)
        expect((yield* repo.list({ accountId: owner.id, limit: 10, status: "failed" })).map((x) => x.error)).toEqual([error])
      }))
  })

  describe(`${name}: JobRepo provider state and lease renewal`, () => {
    test("keeps the provider phase, handle and starts for the lease holder only, and hands them to the next worker", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id)
        yield* submit({ job: j })
        const claimOf = (workerId: string, now: number) => repo.claim({ workerId, now, leaseMs: 1_000, maxAttempts: 3 })
        yield* claimOf("w1", T0)
        expect(yield* repo.saveProviderState(j.id, "other", { phase: "starting", handle: null, starts: 1 })).toBe(false)
        expect(yield* repo.saveProviderState(j.id, "w1", { phase: "starting", handle: null, starts: 1 })).toBe(true)
        expect(Option.getOrThrow(yield* repo.get(j.id))).toMatchObject({ providerPhase: "starting", providerHandle: null, providerStarts: 1 })
        const handle = { id: "pred_abc", data: { statusUrl: "https://provider.example/v1/p/abc", nested: { list: [1, "two"] } } }
        expect(yield* repo.saveProviderState(j.id, "w1", { phase: "started", handle, starts: 1 })).toBe(true)
        // The lease lapses: the next claimer gets the handle to resume, with its attempt counted.
        const taken = Option.getOrThrow(yield* claimOf("w2", T0 + 1_000))
        expect(taken).toMatchObject({ attempts: 2, leaseOwner: "w2", providerPhase: "started", providerHandle: handle, providerStarts: 1 })
        expect(yield* repo.saveProviderState(j.id, "w1", { phase: null, handle: null, starts: 9 })).toBe(false)
        const done = Option.getOrThrow(yield* repo.complete(j.id, "w2", [], T0 + 1_500))
        expect(done).toMatchObject({ status: "completed", providerHandle: handle })
        expect(Option.getOrThrow(yield* repo.get(j.id))).toEqual(done)
        expect(yield* repo.saveProviderState(j.id, "w2", { phase: null, handle: null, starts: 9 })).toBe(false)
      }))

    test("records the route a start was sent on: with the handle, or with the end of a start that ended in its call", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const [polled, done, refused] = [0, 1, 2].map((i) => job(owner.id, { createdAt: T0 + i }))
        for (const j of [polled, done, refused]) yield* submit({ job: j! })
        yield* repo.claimBatch({ workerId: "w", now: T0, leaseMs: 1_000, maxAttempts: 3, limit: 3 })
        expect(Option.getOrThrow(yield* repo.get(polled!.id)).providerRoute).toBeNull()
        // A handle's route is recorded with it, and a later state without one leaves it.
        const onB = { index: 1, providerId: "b", credentialId: "cred-2" }
        expect(yield* repo.saveProviderState(polled!.id, "w", { phase: "started", handle: { id: "h", route: onB }, starts: 1, route: onB }))
          .toBe(true)
        expect(Option.getOrThrow(yield* repo.get(polled!.id)).providerRoute).toEqual(onB)
        yield* repo.saveProviderState(polled!.id, "w", { phase: "started", handle: { id: "h", route: onB }, starts: 1 })
        expect(Option.getOrThrow(yield* repo.complete(polled!.id, "w", [], T0 + 1))).toMatchObject({ status: "completed", providerRoute: onB })
        // No handle: the route comes with the end, completed or failed, and is read back as written.
        const onA = { index: 0, providerId: "a" }
        const completed = Option.getOrThrow(yield* repo.complete(done!.id, "w", [], T0 + 2, onA))
        expect(completed).toMatchObject({ status: "completed", providerHandle: null, providerRoute: onA })
        expect(Option.getOrThrow(yield* repo.get(done!.id))).toEqual(completed)
        const error = { code: "GENERATION_FAILED" as const, message: "refused", type: "input_rejected" as const, retryable: false }
        const failed = Option.getOrThrow(yield* repo.fail(refused!.id, "w", error, T0 + 3, onB))
        expect(failed).toMatchObject({ status: "failed", error, providerRoute: onB })
        expect(Option.getOrThrow(yield* repo.get(refused!.id))).toEqual(failed)
        // Not the lease holder: nothing is written, the route neither.
        const other = job(owner.id, { createdAt: T0 + 3 })
        yield* submit({ job: other })
        yield* repo.claimBatch({ workerId: "w2", now: T0 + 4, leaseMs: 1_000, maxAttempts: 3, limit: 1 })
        expect(Option.isNone(yield* repo.complete(other.id, "w", [], T0 + 5, onA))).toBe(true)
        expect(Option.getOrThrow(yield* repo.get(other.id)).providerRoute).toBeNull()
      }))

    test("renews many leases in one call: only those still held by their workers, answering which", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(100_000)
        const made = [0, 1, 2, 3].map((i) => job(owner.id, { createdAt: T0 + i }))
        for (const j of made) yield* submit({ job: j })
        const [a, b, c, d] = made.map((j) => j.id)
        yield* repo.claimBatch({ workerId: "w1", now: T0, leaseMs: 1_000, maxAttempts: 3, limit: 2 })
        yield* repo.claimBatch({ workerId: "w2", now: T0, leaseMs: 1_000, maxAttempts: 3, limit: 1 })
        yield* repo.complete(b!, "w1", [], T0 + 10)
        const renewed = yield* repo.renewLeases([
          { id: a!, workerId: "w1" },
          { id: b!, workerId: "w1" },
          { id: c!, workerId: "w1" },
          { id: c!, workerId: "w3" },
          { id: d!, workerId: "w1" }
        ], T0 + 500, 5_000)
        expect([...renewed].sort()).toEqual([a!])
        expect(Option.getOrThrow(yield* repo.get(a!)).leaseExpiresAt).toBe(T0 + 5_500)
        expect(Option.getOrThrow(yield* repo.get(c!)).leaseExpiresAt).toBe(T0 + 1_000)
        expect(yield* repo.renewLeases([{ id: c!, workerId: "w2" }, { id: a!, workerId: "w1" }], T0 + 600, 5_000)).toHaveLength(2)
        expect(yield* repo.renewLeases([], T0, 5_000)).toEqual([])
        // a and c are held until T0 + 5_600: no claimer takes them before.
        expect((yield* repo.claimBatch({ workerId: "w4", now: T0 + 5_599, leaseMs: 1_000, maxAttempts: 3, limit: 10 })).map((j) => j.id)).toEqual([d!])
      }))
  })

  describe(`${name}: JobRepo batch claims`, () => {
    const claimOf = (workerId: string, now: number, limit: number, maxAttempts = 3) =>
      Effect.flatMap(JobRepo, (repo) => repo.claimBatch({ workerId, now, leaseMs: 1_000, maxAttempts, limit }))

    test("takes up to the limit in claim order under one lease, as claimedJob writes them", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(100_000)
        // One account's jobs are claimed in the order it submitted them, whatever their times.
        const made = [3, 1, 4, 0, 2].map((i, at) => job(owner.id, { createdAt: T0 + i, fairKey: at * 1_000_000 }))
        for (const j of made) yield* submit({ job: j })
        const first = yield* claimOf("b1", T0 + 10, 3)
        expect(first).toEqual(made.slice(0, 3).map((j) =>
          claimedJob(j, { now: T0 + 10, leaseOwner: "b1", leaseExpiresAt: T0 + 1_010 })
        ))
        for (const j of first) expect(Option.getOrThrow(yield* repo.get(j.id))).toEqual(j)
        expect((yield* claimOf("b2", T0 + 10, 10)).map((j) => j.id)).toEqual(made.slice(3).map((j) => j.id))
        expect(yield* claimOf("b3", T0 + 10, 10)).toEqual([])
        expect(yield* claimOf("b3", T0 + 10, 0)).toEqual([])
      }))

    test("a job submitted after the claim read its clock starts when it was created, not before", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(100_000)
        const late = job(owner.id, { createdAt: T0 + 50 })
        yield* submit({ job: late })
        const [claimed] = yield* claimOf("c1", T0 + 10, 1)
        expect(claimed).toEqual(claimedJob(late, { now: T0 + 10, leaseOwner: "c1", leaseExpiresAt: T0 + 1_010 }))
        expect(claimed!.startedAt).toBe(T0 + 50)
        expect(Option.getOrThrow(yield* repo.get(late.id)).startedAt).toBe(T0 + 50)
        const byId = job(owner.id, { createdAt: T0 + 70 })
        yield* submit({ job: byId })
        const [taken] = yield* repo.claimIds([byId.id], { workerId: "c2", now: T0 + 20, leaseMs: 1_000, maxAttempts: 3 })
        expect(taken!.startedAt).toBe(T0 + 70)
      }))

    test("parallel batch claims never hand a job to two claimers", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(1_000_000)
        for (let i = 0; i < 40; i++) yield* submit({ job: job(owner.id, { createdAt: T0 + i }) })
        const batches = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => claimOf(`p${i}`, T0 + 100, 7)),
          { concurrency: "unbounded" }
        )
        const ids = batches.flat().map((j) => j.id)
        expect(ids).toHaveLength(40)
        expect(new Set(ids).size).toBe(40)
        for (const batch of batches) expect(new Set(batch.map((j) => j.leaseOwner)).size).toBeLessThanOrEqual(1)
      }))

    test("reclaims expired leases first, with another attempt, and leaves used-up ones to the reaper", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(100_000)
        const early = job(owner.id, { createdAt: T0 })
        const late = job(owner.id, { createdAt: T0 + 1 })
        yield* submit({ job: early })
        yield* submit({ job: late })
        yield* claimOf("dead", T0, 2, 2)
        // "dead" lets both leases lapse, late's first.
        yield* repo.renewLeases([{ id: late.id, workerId: "dead" }], T0, 500)
        const fresh = job(owner.id, { createdAt: T0 + 2 })
        yield* submit({ job: fresh })
        const taken = yield* claimOf("w", T0 + 1_000, 2, 2)
        // Each keeps its first start: late's first claim read T0, before late was created, so it started at its creation.
        expect(taken.map((j) => [j.id, j.attempts, j.startedAt])).toEqual([[early.id, 2, T0], [late.id, 2, T0 + 1]])
        // A reclaim keeps the provider state the lost run left: its start may have reached the provider.
        expect(taken.map((j) => [j.providerPhase, j.providerStarts])).toEqual([["starting", 1], ["starting", 1]])
        expect((yield* claimOf("w", T0 + 1_000, 2, 2)).map((j) => [j.id, j.attempts])).toEqual([[fresh.id, 1]])
        // Every lease lapses: early and late have used both attempts, fresh has one left.
        expect((yield* claimOf("x", T0 + 5_000, 10, 2)).map((j) => [j.id, j.attempts])).toEqual([[fresh.id, 2]])
        const reap = (now: number) => repo.reap({ workerId: "r", now, passMs: 1_000, maxAttempts: 2, limit: 1 })
        expect([yield* reap(T0 + 5_000), yield* reap(T0 + 5_000), yield* reap(T0 + 5_000)]).toEqual([1, 1, 0])
        expect(yield* claimOf("y", T0 + 9_000, 10, 2)).toEqual([])
        expect(yield* reap(T0 + 9_000)).toBe(1)
        for (const j of [early, late, fresh]) expect(Option.getOrThrow(yield* repo.get(j.id)).status).toBe("failed")
        const { balance, entries, sum } = yield* balanceAndLedger(owner.id)
        expect(balance).toBe(100_000)
        expect(sum).toBe(balance)
        expect(entries.filter((e) => e.kind === "refund")).toHaveLength(3)
      }))
  })

  describe(`${name}: rate windows by counters`, () => {
    test("a bucket the window's edge cuts through stops counting; only limited windows are counted", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(100_000)
        const perMinute = { requestsPerMinute: 2, requestsPerDay: 0 }
        // Two submits in one second's bucket, 400 ms apart.
        yield* submit({ job: job(owner.id, { createdAt: T0 + 100 }), rateLimits: perMinute })
        yield* submit({ job: job(owner.id, { createdAt: T0 + 500 }), rateLimits: perMinute })
        const refused = yield* submit({ job: job(owner.id, { createdAt: T0 + 30_000 }), rateLimits: perMinute })
        expect(Result.isFailure(refused) && (refused.failure as AnyRefusal).retryAfterSeconds).toBe(31)
        // At T0 + 60_101 the first has left and the second not: the bucket holding both no longer counts.
        expect(codeOf(yield* submit({ job: job(owner.id, { createdAt: T0 + 60_101 }), rateLimits: perMinute }))).toBe("ok")
        // Submits without a day limit were never counted by day: a day limit starts from zero.
        const perDay = { requestsPerMinute: 0, requestsPerDay: 1 }
        expect(codeOf(yield* submit({ job: job(owner.id, { createdAt: T0 + 70_000 }), rateLimits: perDay }))).toBe("ok")
        const daily = yield* submit({ job: job(owner.id, { createdAt: T0 + 80_000 }), rateLimits: perDay })
        expect(Result.isFailure(daily) && (daily.failure as AnyRefusal).retryAfterSeconds).toBe(86_400 - 10)
      }))

    test("parallel submits never overshoot a rate limit", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(1_000_000)
        const limits = { requestsPerMinute: 4, requestsPerDay: 0 }
        const results = yield* Effect.all(
          Array.from({ length: 12 }, (_, i) => submit({ job: job(owner.id, { createdAt: T0 + i }), rateLimits: limits })),
          { concurrency: "unbounded" }
        )
        expect(results.filter(Result.isSuccess)).toHaveLength(4)
      }))

    test("parallel submits of one idempotency key make one job", () =>
      Effect.gen(function*() {
        const owner = yield* createAccount(100_000)
        const idem = { key: "same", requestHash: "h", notBefore: T0 - 1 }
        const results = yield* Effect.all(
          Array.from({ length: 6 }, () => submit({ job: job(owner.id), idempotency: idem })),
          { concurrency: "unbounded" }
        )
        const outcomes = results.map((r) => Result.getOrThrow(r))
        expect(outcomes.filter((o) => o._tag === "Created")).toHaveLength(1)
        expect(new Set(outcomes.map((o) => o.job.id)).size).toBe(1)
        expect((yield* balanceAndLedger(owner.id)).balance).toBe(99_000)
      }))
  })

  describe(`${name}: webhook outbox`, () => {
    const output = { url: "http://f/1.png", type: "image" as const, metadata: { width: 8, height: 8, format: "png" } }
    const finish = (webhookUrl: string | null, how: "complete" | "fail" | "cancel") =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(10_000)
        const j = job(owner.id, { webhookUrl })
        yield* submit({ job: j })
        if (how === "cancel") {
          yield* repo.cancel(j.id, owner.id, T0 + 5)
        } else {
          yield* repo.claim({ workerId: "w", now: T0 + 1, leaseMs: 1_000, maxAttempts: 3 })
          if (how === "complete") yield* repo.complete(j.id, "w", [output], T0 + 5)
          else yield* repo.fail(j.id, "w", { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, T0 + 5)
        }
        return j
      })

    test("writes one due delivery with the spec's payload when a job with a webhookUrl ends", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        const done = yield* finish("https://hooks.genjobs.test/a", "complete")
        const [delivery, ...others] = yield* deliveries.forJob(done.id)
        expect(others).toEqual([])
        expect(delivery).toMatchObject({ url: "https://hooks.genjobs.test/a", status: "pending", attempts: [], nextAttemptAt: T0 + 5 })
        expect(JSON.parse(delivery!.payload)).toEqual({
          jobId: done.id,
          requestId: done.requestId,
          status: "completed",
          output: { url: output.url, type: "image", metadata: output.metadata },
          completedAt: new Date(T0 + 5).toISOString()
        })
        const failed = yield* finish("https://hooks.genjobs.test/b", "fail")
        const [failure] = yield* deliveries.forJob(failed.id)
        expect(JSON.parse(failure!.payload)).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false } })
        expect(JSON.parse(failure!.payload).output).toBeUndefined()
        expect(yield* deliveries.forJob((yield* finish("https://hooks.genjobs.test/c", "cancel")).id)).toEqual([])
        expect(yield* deliveries.forJob((yield* finish(null, "complete")).id)).toEqual([])
      }))

    test("completions ending together write a delivery for each job with a webhookUrl and none for the others", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const deliveries = yield* WebhookDeliveryRepo
        const owner = yield* createAccount(10_000)
        const urls = ["https://hooks.genjobs.test/0", null, "https://hooks.genjobs.test/2", null, null]
        const jobs = urls.map((webhookUrl, i) => job(owner.id, { webhookUrl, createdAt: T0 + i }))
        for (const j of jobs) yield* submit({ job: j })
        expect(yield* repo.claimBatch({ workerId: "w", now: T0 + 10, leaseMs: 1_000, maxAttempts: 3, limit: 5 })).toHaveLength(5)
        // A job another worker holds, completed among them by "w", ends nothing.
        const held = job(owner.id, { createdAt: T0 + 5 })
        yield* submit({ job: held })
        expect(yield* repo.claimBatch({ workerId: "v", now: T0 + 10, leaseMs: 1_000, maxAttempts: 3, limit: 1 })).toHaveLength(1)
        const ended = yield* Effect.all([...jobs, held].map((j) => repo.complete(j.id, "w", [output], T0 + 20)), { concurrency: "unbounded" })
        expect(ended.map((e) => Option.map(e, (j) => j.status))).toEqual([...jobs.map(() => Option.some("completed")), Option.none()])
        expect(Option.getOrThrow(yield* repo.get(held.id))).toMatchObject({ status: "processing", leaseOwner: "v" })
        for (const [i, j] of jobs.entries()) {
          const written = yield* deliveries.forJob(j.id)
          expect(written.map((d) => d.url)).toEqual(urls[i] === null ? [] : [urls[i]])
          expect(Option.getOrThrow(yield* repo.get(j.id))).toMatchObject({ status: "completed", leaseOwner: null, completedAt: T0 + 20 })
        }
      }))

    test("hands a due delivery to one dispatcher at a time and records attempts for the lease holder only", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        const done = yield* finish("https://hooks.genjobs.test/a", "complete")
        const claim = (workerId: string, now: number) =>
          deliveries.claimDue({ workerId, now, leaseMs: 30_000, maxPerAccount: 4, limit: 1 }).pipe(Effect.map((claimed) => Option.fromNullishOr(claimed[0])))
        expect(Option.isNone(yield* claim("d1", T0 + 4))).toBe(true)
        const claimed = Option.getOrThrow(yield* claim("d1", T0 + 5))
        expect(claimed).toMatchObject({ jobId: done.id, leaseOwner: "d1", leaseExpiresAt: T0 + 30_005 })
        expect(Option.isNone(yield* claim("d2", T0 + 6))).toBe(true)
        const attempt = { attempt: 1, at: T0 + 6, statusCode: 500, error: null, durationMs: 12, responseBody: "oops" }
        expect(yield* deliveries.recordAttempt(claimed.id, "d2", attempt, { status: "sent" })).toBe(false)
        expect(yield* deliveries.recordAttempt(claimed.id, "d1", attempt, { status: "pending", nextAttemptAt: T0 + 1_006 })).toBe(true)
        expect(Option.isNone(yield* claim("d2", T0 + 1_005))).toBe(true)
        const retry = Option.getOrThrow(yield* claim("d2", T0 + 1_006))
        expect(retry.attempts).toEqual([attempt])
        // d2 dies holding the lease; after it expires d3 takes over.
        const taken = Option.getOrThrow(yield* claim("d3", T0 + 31_006))
        const second = { ...attempt, attempt: 2, statusCode: 204, responseBody: null }
        expect(yield* deliveries.recordAttempt(taken.id, "d3", second, { status: "sent" })).toBe(true)
        const [final] = yield* deliveries.forJob(done.id)
        expect(final).toMatchObject({ status: "sent", nextAttemptAt: null, leaseOwner: null, attempts: [attempt, second] })
        expect(Option.isNone(yield* claim("d4", T0 + 999_999))).toBe(true)
      }))

    test("keeps a receiver's answer as it came, whatever characters it holds, attempt after attempt", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        const done = yield* finish("https://hooks.genjobs.test/a", "complete")
        const claim = (workerId: string, now: number) =>
          deliveries.claimDue({ workerId, now, leaseMs: 30_000, maxPerAccount: 4, limit: 1 }).pipe(Effect.map((claimed) => claimed[0]!))
        // A NUL (which PostgreSQL's jsonb refuses), quotes, a backslash, a bracket, beyond the BMP.
        const odd = { attempt: 1, at: T0 + 6, statusCode: 500, error: "HTTP 500", durationMs: 3, responseBody: "a\u0000\"b\\]],[ \u{1F600} é" }
        const first = yield* claim("d1", T0 + 5)
        expect(yield* deliveries.recordAttempt(first.id, "d1", odd, { status: "pending", nextAttemptAt: T0 + 10 })).toBe(true)
        const second = { ...odd, attempt: 2, at: T0 + 11, responseBody: "[]" }
        expect(yield* deliveries.recordAttempt((yield* claim("d2", T0 + 10)).id, "d2", second, { status: "pending", nextAttemptAt: T0 + 20 })).toBe(true)
        const third = { ...odd, attempt: 3, at: T0 + 21, statusCode: 204, error: null, responseBody: null }
        expect(yield* deliveries.recordAttempt((yield* claim("d3", T0 + 20)).id, "d3", third, { status: "sent" })).toBe(true)
        const [final] = yield* deliveries.forJob(done.id)
        expect(final!.attempts).toEqual([odd, second, third])
        expect(Option.getOrThrow(yield* deliveries.get(first.id)).attempts).toEqual([odd, second, third])
      }))

    test("records attempts asked for together, each only for its own lease holder", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        for (let i = 0; i < 5; i++) yield* finish(`https://hooks.genjobs.test/${i}`, "complete")
        const claimed = yield* deliveries.claimDue({ workerId: "d1", now: T0 + 5, leaseMs: 30_000, maxPerAccount: 8, limit: 5 })
        expect(claimed).toHaveLength(5)
        const attempt = { attempt: 1, at: T0 + 6, statusCode: 500, error: "HTTP 500", durationMs: 3, responseBody: "a\u0000\"b\\]" }
        const outcomes = [
          { holder: "d1", outcome: { status: "sent" } },
          { holder: "d1", outcome: { status: "pending", nextAttemptAt: T0 + 1_006 } },
          { holder: "d2", outcome: { status: "sent" } },
          { holder: "d1", outcome: { status: "failed" } },
          { holder: "d1", outcome: { status: "pending", nextAttemptAt: T0 + 2_006 } }
        ] as const
        // At once, as the attempts of one claim end: a store that writes them in one batch answers each.
        const recorded = yield* Effect.all(
          claimed.map((d, i) => deliveries.recordAttempt(d.id, outcomes[i]!.holder, attempt, outcomes[i]!.outcome)),
          { concurrency: "unbounded" }
        )
        expect(recorded).toEqual([true, true, false, true, true])
        const stored = yield* Effect.forEach(claimed, (d) => Effect.map(deliveries.get(d.id), Option.getOrThrow))
        expect(stored.map((d) => [d.status, d.nextAttemptAt, d.leaseOwner, d.attempts])).toEqual([
          ["sent", null, null, [attempt]],
          ["pending", T0 + 1_006, null, [attempt]],
          ["pending", claimed[2]!.nextAttemptAt, "d1", []],
          ["failed", null, null, [attempt]],
          ["pending", T0 + 2_006, null, [attempt]]
        ])
        // One delivery's outcome asked for twice at once, after another's (so a batching store
        // writes the two in one batch): recorded once.
        const [twice, other] = yield* deliveries.claimDue({ workerId: "d3", now: T0 + 2_006, leaseMs: 30_000, maxPerAccount: 8, limit: 5 })
        const again = yield* Effect.all(
          [other!, twice!, twice!].map((d) => deliveries.recordAttempt(d.id, "d3", attempt, { status: "sent" })),
          { concurrency: "unbounded" }
        )
        expect([again[0], again[1]! !== again[2]!]).toEqual([true, true])
        expect(Option.getOrThrow(yield* deliveries.get(twice!.id)).attempts).toHaveLength(2)
      }))

    test("lists an account's deliveries newest first and retries failed ones only", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        const a = yield* finish("https://hooks.genjobs.test/a", "complete")
        const b = yield* finish("https://hooks.genjobs.test/b", "fail")
        const [da] = yield* deliveries.forJob(a.id)
        const [db] = yield* deliveries.forJob(b.id)
        expect((yield* deliveries.list({ accountId: a.accountId, limit: 10 })).map((d) => d.id)).toEqual([da!.id])
        expect((yield* deliveries.list({ accountId: b.accountId, limit: 10, jobId: b.id, status: "pending" })).map((d) => d.id)).toEqual([db!.id])
        expect(yield* deliveries.list({ accountId: b.accountId, limit: 10, status: "failed" })).toEqual([])
        expect(Option.getOrThrow(yield* deliveries.get(da!.id))).toEqual(da)
        expect(Option.isNone(yield* deliveries.retry(da!.id, T0 + 10))).toBe(true)
        const claimed = (yield* deliveries.claimDue({ workerId: "d", now: T0 + 10, leaseMs: 1_000, maxPerAccount: 4, limit: 1 }))[0]!
        const attempt = { attempt: 1, at: T0 + 10, statusCode: null, error: "refused", durationMs: 1, responseBody: null }
        yield* deliveries.recordAttempt(claimed.id, "d", attempt, { status: "failed" })
        const again = Option.getOrThrow(yield* deliveries.retry(claimed.id, T0 + 20))
        expect(again).toMatchObject({ status: "pending", nextAttemptAt: T0 + 20, attempts: [attempt] })
        const due = yield* deliveries.claimDue({ workerId: "e", now: T0 + 20, leaseMs: 1_000, maxPerAccount: 4, limit: 3 })
        expect(due.map((d) => d.id)).toContain(claimed.id)
      }))

    test("parallel claims never hand one delivery to two dispatchers", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        for (let i = 0; i < 3; i++) yield* finish(`https://hooks.genjobs.test/${i}`, "complete")
        const claims = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => deliveries.claimDue({ workerId: `d${i}`, now: T0 + 10, leaseMs: 30_000, maxPerAccount: 4, limit: 1 + (i % 3) })),
          { concurrency: "unbounded" }
        )
        const ids = claims.flat().map((c) => c.id)
        expect(ids).toHaveLength(3)
        expect(new Set(ids).size).toBe(3)
      }))
  })

  describe(`${name}: webhook claims across accounts`, () => {
    /** `n` finished jobs of one account with webhooks, their deliveries due at `at`. */
    const dueDeliveries = (accountId: AccountId, n: number, at: number) =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        for (let i = 0; i < n; i++) {
          const j = job(accountId, { webhookUrl: `https://hooks.genjobs.test/${i}` })
          yield* submit({ job: j })
          const claimed = Option.getOrThrow(yield* repo.claim({ workerId: "w", now: at, leaseMs: 1_000, maxAttempts: 3 }))
          yield* repo.complete(claimed.id, "w", [], at)
        }
      })
    /** Up to `limit` deliveries in one claim. */
    const claimMany = (workerId: string, now: number, maxPerAccount: number, limit: number) =>
      Effect.flatMap(WebhookDeliveryRepo, (deliveries) => deliveries.claimDue({ workerId, now, leaseMs: 30_000, maxPerAccount, limit }))
    const claim = (workerId: string, now: number, maxPerAccount = 2) =>
      claimMany(workerId, now, maxPerAccount, 1).pipe(Effect.map((claimed) => Option.fromNullishOr(claimed[0])))

    test("serves the account with the fewest live leases first and none beyond its cap", () =>
      Effect.gen(function*() {
        const slow = (yield* createAccount(10_000)).id
        const fast = (yield* createAccount(10_000)).id
        yield* dueDeliveries(slow, 3, T0)
        yield* dueDeliveries(fast, 1, T0 + 100)
        const order = []
        for (let i = 0; i < 4; i++) order.push(Option.map(yield* claim(`d${i}`, T0 + 200), (d) => d.accountId))
        // The slow account's oldest, then the fast one (no lease yet), then the slow one to its cap of 2.
        expect(order).toEqual([Option.some(slow), Option.some(fast), Option.some(slow), Option.none()])
        // Its leases run out: the slow account's third delivery may go.
        expect(Option.map(yield* claim("d5", T0 + 30_200), (d) => d.accountId)).toEqual(Option.some(slow))
      }))

    test("serves an account with none in flight before a long backlog of one at work, however long", () =>
      Effect.gen(function*() {
        const busy = (yield* createAccount(1_000_000)).id
        const idle = (yield* createAccount(1_000_000)).id
        // More due deliveries of one account than a claim reads in the order they fell due.
        yield* dueDeliveries(busy, 70, T0)
        yield* dueDeliveries(idle, 1, T0 + 100)
        expect(Option.map(yield* claim("d0", T0 + 200, 3), (d) => d.accountId)).toEqual(Option.some(busy))
        // The busy account has one in flight: the idle account's delivery, due later, goes first.
        expect(Option.map(yield* claim("d1", T0 + 200, 3), (d) => d.accountId)).toEqual(Option.some(idle))
        expect(Option.map(yield* claim("d2", T0 + 200, 3), (d) => d.accountId)).toEqual(Option.some(busy))
        expect(Option.map(yield* claim("d3", T0 + 200, 3), (d) => d.accountId)).toEqual(Option.some(busy))
        // At its cap of 3, and nothing else due.
        expect(yield* claim("d4", T0 + 200, 3)).toEqual(Option.none())
      }))

    test("parallel claims never exceed an account's cap", () =>
      Effect.gen(function*() {
        const owner = (yield* createAccount(10_000)).id
        yield* dueDeliveries(owner, 6, T0)
        const claims = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => claimMany(`d${i}`, T0 + 10, 3, 1 + (i % 4))),
          { concurrency: "unbounded" }
        )
        const ids = claims.flat().map((d) => d.id)
        expect([ids.length, new Set(ids).size]).toEqual([3, 3])
      }))

    test("one claim of several takes what as many claims of one each would, in their order, each leased to it", () =>
      Effect.gen(function*() {
        const slow = (yield* createAccount(10_000)).id
        const fast = (yield* createAccount(10_000)).id
        yield* dueDeliveries(slow, 3, T0)
        yield* dueDeliveries(fast, 1, T0 + 100)
        const claimed = yield* claimMany("d", T0 + 200, 2, 10)
        // As the claims of one above: the slow account's oldest, the fast one, the slow one to its cap of 2.
        expect(claimed.map((d) => d.accountId)).toEqual([slow, fast, slow])
        expect(claimed.map((d) => [d.leaseOwner, d.leaseExpiresAt])).toEqual(Array(3).fill(["d", T0 + 30_200]))
        expect(claimed[0]!.createdAt <= claimed[2]!.createdAt).toBe(true)
        expect(yield* claimMany("e", T0 + 200, 2, 10)).toEqual([])
      }))

    test("one claim of several past the first due deliveries: idle accounts' first, then the busy one's to its cap", () =>
      Effect.gen(function*() {
        const busy = (yield* createAccount(1_000_000)).id
        const idle = [(yield* createAccount(1_000_000)).id, (yield* createAccount(1_000_000)).id]
        // More due deliveries of one account than a claim reads in the order they fell due.
        yield* dueDeliveries(busy, 70, T0)
        yield* dueDeliveries(idle[0]!, 1, T0 + 100)
        yield* dueDeliveries(idle[1]!, 2, T0 + 150)
        expect((yield* claimMany("d0", T0 + 200, 3, 1)).map((d) => d.accountId)).toEqual([busy])
        // The busy account has one in flight: the idle accounts' first go before its second and third.
        const claimed = yield* claimMany("d1", T0 + 200, 3, 10)
        expect(claimed.map((d) => d.accountId)).toEqual([idle[0], idle[1], busy, idle[1], busy])
        expect(yield* claimMany("d2", T0 + 200, 3, 10)).toEqual([])
      }))

    test("tells when the next pending attempt falls due", () =>
      Effect.gen(function*() {
        const deliveries = yield* WebhookDeliveryRepo
        expect(yield* deliveries.nextAttemptAfter(T0)).toEqual(Option.none())
        const owner = (yield* createAccount(10_000)).id
        yield* dueDeliveries(owner, 2, T0)
        expect(yield* deliveries.nextAttemptAfter(T0 - 1)).toEqual(Option.some(T0))
        expect(yield* deliveries.nextAttemptAfter(T0)).toEqual(Option.none())
        const claimed = Option.getOrThrow(yield* claim("d", T0))
        const attempt = { attempt: 1, at: T0, statusCode: 500, error: "HTTP 500", durationMs: 1, responseBody: null }
        yield* deliveries.recordAttempt(claimed.id, claimed.leaseOwner!, attempt, { status: "pending", nextAttemptAt: T0 + 4_000 })
        expect(yield* deliveries.nextAttemptAfter(T0)).toEqual(Option.some(T0 + 4_000))
      }))
  })

  describe(`${name}: UploadRepo`, () => {
    const upload = (accountId: string, id: string, expiresAt: number) => ({
      id,
      accountId,
      filename: "cat.png",
      contentType: "image/png",
      status: "pending" as const,
      size: null,
      verifiedAt: null,
      createdAt: expiresAt - 3_600_000,
      uploadUrlExpiresAt: expiresAt - 2_700_000,
      expiresAt,
      leaseOwner: null,
      leaseExpiresAt: null
    })

    test("stores uploads and records the received size once, while pending", () =>
      Effect.gen(function*() {
        const repo = yield* UploadRepo
        const owner = yield* createAccount(0)
        const u = upload(owner.id, "upl_1", T0 + 3_600_000)
        yield* repo.create(u)
        expect(Option.getOrThrow(yield* repo.get("upl_1"))).toEqual(u)
        expect(Option.isNone(yield* repo.get("upl_missing"))).toBe(true)
        expect(yield* repo.markUploaded("upl_1", 1234)).toBe(true)
        expect(Option.getOrThrow(yield* repo.get("upl_1")).size).toBe(1234)
        expect(yield* repo.markUploaded("upl_1", 99)).toBe(false)
        expect(yield* repo.markUploaded("upl_missing", 1)).toBe(false)
        // The file could not be stored: the size is forgotten and the next PUT may record it.
        yield* repo.unmarkUploaded("upl_1")
        expect(Option.getOrThrow(yield* repo.get("upl_1")).size).toBeNull()
        expect(yield* repo.markUploaded("upl_1", 99)).toBe(true)
      }))

    test("hands expired uploads to one sweeper at a time, oldest first", () =>
      Effect.gen(function*() {
        const repo = yield* UploadRepo
        const owner = yield* createAccount(0)
        for (const [id, at] of [["upl_b", T0 + 2], ["upl_a", T0 + 1], ["upl_c", T0 + 100]] as const) {
          yield* repo.create(upload(owner.id, id, at))
        }
        expect(yield* repo.claimExpired({ workerId: "s1", now: T0, leaseMs: 1_000, limit: 10 })).toEqual([])
        const first = yield* repo.claimExpired({ workerId: "s1", now: T0 + 10, leaseMs: 1_000, limit: 10 })
        expect(first.map((u) => [u.id, u.leaseOwner])).toEqual([["upl_a", "s1"], ["upl_b", "s1"]])
        expect(yield* repo.claimExpired({ workerId: "s2", now: T0 + 20, leaseMs: 1_000, limit: 10 })).toEqual([])
        expect(yield* repo.markExpired("upl_a", "s2")).toBe(false)
        expect(yield* repo.markExpired("upl_a", "s1")).toBe(true)
        expect(Option.getOrThrow(yield* repo.get("upl_a"))).toMatchObject({ status: "expired", leaseOwner: null })
        expect(yield* repo.markUploaded("upl_a", 5)).toBe(false)
        // s1 died before finishing upl_b: after its lease another sweeper takes it.
        const later = yield* repo.claimExpired({ workerId: "s2", now: T0 + 1_010, leaseMs: 1_000, limit: 1 })
        expect(later.map((u) => u.id)).toEqual(["upl_b"])
        const parallel = yield* Effect.all(
          [1, 2, 3].map((n) => repo.claimExpired({ workerId: `p${n}`, now: T0 + 5_000, leaseMs: 1_000, limit: 10 })),
          { concurrency: "unbounded" }
        )
        const ids = parallel.flat().map((u) => u.id)
        expect(ids.sort()).toEqual(["upl_b", "upl_c"])
      }))

    test("hands uploads whose URL has closed to one verifier at a time, once each", () =>
      Effect.gen(function*() {
        const repo = yield* UploadRepo
        const owner = yield* createAccount(0)
        // URLs close at T0 + 1 (upl_v1), T0 + 2 (upl_v2), T0 + 500 (upl_v3); lifetimes end 45 minutes later.
        for (const [id, closes] of [["upl_v2", T0 + 2], ["upl_v1", T0 + 1], ["upl_v3", T0 + 500]] as const) {
          yield* repo.create(upload(owner.id, id, closes + 2_700_000))
        }
        const claim = (workerId: string, now: number, closedBy: number, limit = 10) =>
          repo.claimUnverified({ workerId, now, closedBy, leaseMs: 1_000, limit })
        expect(yield* claim("v1", T0 + 100, T0)).toEqual([])
        const first = yield* claim("v1", T0 + 100, T0 + 10)
        expect(first.map((u) => [u.id, u.leaseOwner])).toEqual([["upl_v1", "v1"], ["upl_v2", "v1"]])
        expect(yield* claim("v2", T0 + 200, T0 + 10)).toEqual([])
        expect(yield* repo.markVerified({ id: "upl_v1", workerId: "v2", now: T0 + 200, size: 7 })).toBe(false)
        expect(yield* repo.markVerified({ id: "upl_v1", workerId: "v1", now: T0 + 200, size: 7 })).toBe(true)
        expect(Option.getOrThrow(yield* repo.get("upl_v1"))).toMatchObject({ size: 7, verifiedAt: T0 + 200, leaseOwner: null })
        // A size the upload route recorded stays; a missing file leaves it null.
        yield* repo.markUploaded("upl_v3", 42)
        // v1 died holding upl_v2: after the lease it is claimable again; verified ones never are.
        const later = yield* claim("v3", T0 + 1_200, T0 + 600)
        expect(later.map((u) => u.id)).toEqual(["upl_v2", "upl_v3"])
        expect(yield* repo.markVerified({ id: "upl_v2", workerId: "v3", now: T0 + 1_300, size: null })).toBe(true)
        expect(yield* repo.markVerified({ id: "upl_v3", workerId: "v3", now: T0 + 1_300, size: 9 })).toBe(true)
        expect(Option.getOrThrow(yield* repo.get("upl_v2")).size).toBeNull()
        expect(Option.getOrThrow(yield* repo.get("upl_v3")).size).toBe(42)
        expect(yield* claim("v4", T0 + 5_000, T0 + 5_000)).toEqual([])
      }))

    test("leaves uploads past their lifetime, or already expired, to the expiry pass", () =>
      Effect.gen(function*() {
        const repo = yield* UploadRepo
        const owner = yield* createAccount(0)
        yield* repo.create(upload(owner.id, "upl_old", T0 + 3_000_000))
        yield* repo.create(upload(owner.id, "upl_gone", T0 + 3_000_000))
        const [gone] = yield* repo.claimExpired({ workerId: "e", now: T0 + 3_000_000, leaseMs: 1, limit: 1 })
        expect(gone?.id).toBe("upl_gone")
        yield* repo.markExpired("upl_gone", "e")
        expect(yield* repo.claimUnverified({ workerId: "v", now: T0 + 3_000_000, closedBy: T0 + 3_000_000, leaseMs: 1, limit: 10 }))
          .toEqual([])
      }))
  })

  describe(`${name}: RetentionRepo`, () => {
    const filter = { statuses: retainedStatuses, unsentDeliveries }
    type Ending = "complete" | "fail" | "cancel" | "run" | "wait"
    /** A job of `owner` that ends (or not) at `at`; with a webhook whose delivery ends as `delivery` says. */
    const jobEnding = (owner: AccountId, how: Ending, at: number, delivery?: "sent" | "failed" | "pending") =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const deliveries = yield* WebhookDeliveryRepo
        const j = job(owner, { createdAt: at - 10, webhookUrl: delivery === undefined ? null : "https://hooks.genjobs.test/r" })
        expect(Result.isSuccess(yield* submit({ job: j }))).toBe(true)
        if (how === "cancel") yield* repo.cancel(j.id, owner, at)
        if (how === "complete" || how === "fail" || how === "run") {
          expect(Option.isSome(yield* repo.claim({ workerId: `w${at}`, now: at - 5, leaseMs: 60_000, maxAttempts: 3 }))).toBe(true)
        }
        if (how === "complete") yield* repo.complete(j.id, `w${at}`, [], at)
        if (how === "fail") yield* repo.fail(j.id, `w${at}`, { code: "GENERATION_FAILED", message: "no", type: "input_rejected", retryable: false }, at)
        if (delivery === "sent" || delivery === "failed") {
          const claimed = (yield* deliveries.claimDue({ workerId: "d", now: at, leaseMs: 1_000, maxPerAccount: 100, limit: 1 }))[0]!
          const attempt = { attempt: 1, at, statusCode: 200, error: null, durationMs: 1, responseBody: null }
          expect(yield* deliveries.recordAttempt(claimed.id, "d", attempt, { status: delivery })).toBe(true)
        }
        return j.id
      })

    test("finds ended jobs by end, and removes them with their sent and failed deliveries; the ledger stays whole", () =>
      Effect.gen(function*() {
        const retention = yield* RetentionRepo
        const jobs = yield* JobRepo
        const deliveries = yield* WebhookDeliveryRepo
        const owner = yield* createAccount(100_000)
        const failed = yield* jobEnding(owner.id, "fail", T0 + 300, "failed")
        const sent = yield* jobEnding(owner.id, "complete", T0 + 100, "sent")
        const cancelled = yield* jobEnding(owner.id, "cancel", T0 + 200)
        const recent = yield* jobEnding(owner.id, "complete", T0 + 1_000, "sent")
        // Last: a dispatcher claiming for the jobs above would take its delivery.
        const unsent = yield* jobEnding(owner.id, "complete", T0 + 150, "pending")
        const running = yield* jobEnding(owner.id, "run", T0 + 50)
        const waiting = yield* jobEnding(owner.id, "wait", T0 + 40)
        const before = yield* balanceAndLedger(owner.id)

        const ended = (endedBy: number, limit: number) => retention.endedJobs({ ...filter, endedBy, limit })
        expect(yield* ended(T0 + 300, 10)).toEqual([sent, cancelled, failed])
        expect(yield* ended(T0 + 300, 2)).toEqual([sent, cancelled])
        expect(yield* ended(T0 + 299, 10)).toEqual([sent, cancelled])

        const everyJob = [sent, cancelled, failed, unsent, recent, running, waiting]
        expect(yield* retention.removeJobs({ ...filter, jobIds: [sent, cancelled, failed, unsent, running, waiting] }))
          .toEqual({ jobs: 3, deliveries: 2 })
        const left = yield* Effect.filter(everyJob, (id) => Effect.map(jobs.get(id), Option.isSome))
        expect(left).toEqual([unsent, recent, running, waiting])
        expect(yield* deliveries.forJob(sent)).toEqual([])
        expect(yield* deliveries.forJob(failed)).toEqual([])
        expect((yield* deliveries.forJob(unsent)).map((d) => d.status)).toEqual(["pending"])
        expect((yield* deliveries.forJob(recent)).map((d) => d.status)).toEqual(["sent"])

        // Every charge and refund stays, naming jobs that are gone.
        const after = yield* balanceAndLedger(owner.id)
        expect(after.entries).toEqual(before.entries)
        expect(after.sum).toBe(after.balance)
        expect(after.entries.filter((e) => e.jobId === failed).map((e) => e.kind).sort()).toEqual(["charge", "refund"])
        expect(yield* retention.removeJobs({ ...filter, jobIds: [sent, failed] })).toEqual({ jobs: 0, deliveries: 0 })
        expect(yield* retention.removeJobs({ ...filter, jobIds: [] })).toEqual({ jobs: 0, deliveries: 0 })
      }))

    test("keeps a job whose failed delivery was retried after the job was found", () =>
      Effect.gen(function*() {
        const retention = yield* RetentionRepo
        const deliveries = yield* WebhookDeliveryRepo
        const owner = yield* createAccount(100_000)
        const failed = yield* jobEnding(owner.id, "fail", T0 + 100, "failed")
        expect(yield* retention.endedJobs({ ...filter, endedBy: T0 + 100, limit: 10 })).toEqual([failed])
        const [delivery] = yield* deliveries.forJob(failed)
        yield* deliveries.retry(delivery!.id, T0 + 200)
        expect(yield* retention.removeJobs({ ...filter, jobIds: [failed] })).toEqual({ jobs: 0, deliveries: 0 })
        expect(Option.isSome(yield* (yield* JobRepo).get(failed))).toBe(true)
        expect((yield* deliveries.forJob(failed)).map((d) => d.status)).toEqual(["pending"])
        expect(yield* retention.endedJobs({ ...filter, endedBy: T0 + 100, limit: 10 })).toEqual([])
      }))

    test("purges idempotency records created before the cutoff, a batch at a time", () =>
      Effect.gen(function*() {
        const retention = yield* RetentionRepo
        const owner = yield* createAccount(100_000)
        const keyed = (key: string, createdAt: number) =>
          submit({ job: job(owner.id, { createdAt }), idempotency: { key, requestHash: "h", notBefore: T0 - 1 } })
        for (const [key, at] of [["a", T0], ["b", T0 + 10], ["c", T0 + 20]] as const) {
          expect(Result.getOrThrow(yield* keyed(key, at))._tag).toBe("Created")
        }
        expect(yield* retention.purgeIdempotency(T0 + 20, 1)).toBe(1)
        expect(yield* retention.purgeIdempotency(T0 + 20, 10)).toBe(1)
        expect(yield* retention.purgeIdempotency(T0 + 20, 10)).toBe(0)
        // Within the same window a purged key no longer replays; the one kept does.
        expect(Result.getOrThrow(yield* keyed("a", T0 + 30))._tag).toBe("Created")
        expect(Result.getOrThrow(yield* keyed("b", T0 + 30))._tag).toBe("Created")
        expect(Result.getOrThrow(yield* keyed("c", T0 + 30))._tag).toBe("Replayed")
      }))

    test("gives the lease to one owner at a time, renews it for its owner, and hands it on once expired", () =>
      Effect.gen(function*() {
        const retention = yield* RetentionRepo
        expect(yield* retention.takeLease("retention", "a", T0, T0 + 100)).toBe(true)
        expect(yield* retention.takeLease("retention", "b", T0 + 50, T0 + 150)).toBe(false)
        expect(yield* retention.takeLease("other", "b", T0 + 50, T0 + 150)).toBe(true)
        expect(yield* retention.takeLease("retention", "a", T0 + 90, T0 + 190)).toBe(true)
        expect(yield* retention.takeLease("retention", "b", T0 + 189, T0 + 289)).toBe(false)
        expect(yield* retention.takeLease("retention", "b", T0 + 190, T0 + 290)).toBe(true)
        expect(yield* retention.takeLease("retention", "a", T0 + 200, T0 + 300)).toBe(false)
      }))
  })
}
