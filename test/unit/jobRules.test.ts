import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { memoryJobDriver } from "../../adapters/memory/MemoryJobs.js"
import { accountRepo } from "../../adapters/memory/MemoryAccounts.js"
import { makeMemoryState, type MemoryState } from "../../adapters/memory/state.js"
import { StoreError } from "../../src/domain/errors.js"
import type { LimitPlan } from "../../src/domain/providerLimits.js"
import type { AccountId } from "../../src/domain/ids.js"
import type { JobDrivers, JobLeaseDriver } from "../../src/ports/JobLeaseDriver.js"
import type { JobStoreDriver } from "../../src/ports/JobStoreDriver.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { account, job, NO_LIMITS, T0 } from "../conformance/fixtures.js"

const writes = new Set([
  "claimIdempotency",
  "chargeAccount",
  "recordRateWindows",
  "submit",
  "insertJob",
  "claimBatch",
  "updateJob",
  "postLedger",
  "insertDeliveries",
  "finishHeld",
  "takeLease",
  "pruneWindows",
  "foldJobEnds",
  "renewLeases",
  "updateProviderStates"
])

/** One atomic statement each, written outside any transaction (the driver ports say so). */
const standalone = new Set(["submit", "updateProviderStates", "claimBatch", "foldJobEnds"])

/** Drivers with some primitives replaced, recording every call and any write made outside a transaction. */
const recording = (base: JobDrivers, overrides: Partial<JobStoreDriver & JobLeaseDriver> = {}) => {
  const calls: Array<string> = []
  const outside: Array<string> = []
  let depth = 0
  const wrap = <D extends object>(half: D): D =>
    Object.fromEntries(
      Object.entries(half).map(([name, primitive]) => {
        const chosen = (name in overrides ? overrides[name as keyof typeof overrides] : primitive) as unknown
        const recorded = (run: () => Effect.Effect<unknown>) =>
          Effect.suspend(() => {
            calls.push(name)
            if (writes.has(name) && !standalone.has(name) && depth === 0) outside.push(name)
            return run()
          })
        // lockProviderLimits is an effect, not a function.
        return [name, Effect.isEffect(chosen)
          ? recorded(() => chosen as Effect.Effect<unknown>)
          : (...args: Array<unknown>) => recorded(() => (chosen as (...a: Array<unknown>) => Effect.Effect<unknown>)(...args))]
      })
    ) as D
  const store: JobStoreDriver = {
    ...wrap(base.store),
    transaction: (effect) =>
      base.store.transaction(Effect.suspend(() => {
        depth++
        return Effect.ensuring(effect, Effect.sync(() => depth--))
      }))
  }
  return { drivers: { store, leases: wrap(base.leases) }, calls, outside }
}

const setup = Effect.gen(function*() {
  const state = yield* makeMemoryState
  const owner = yield* accountRepo(state).create(account(), 10_000)
  return { state, owner, repo: yield* makeJobRepo(memoryJobDriver(state)) }
})

const submitCommand = (accountId: AccountId, overrides: Parameters<typeof job>[1] = {}) => ({
  job: job(accountId, overrides),
  maxConcurrentJobs: 100,
  rateLimits: NO_LIMITS
})

const settled = (state: MemoryState) => ({
  balance: [...state.accounts.values()][0]!.balanceMicroCents,
  refunds: state.ledger.filter((e) => e.kind === "refund").length,
  deliveries: state.deliveries.size,
  changes: state.changes.entries.length
})

describe("job rules over a driver", () => {
  it.effect("a conditional write that loses a race settles nothing: no refund, no webhook row, no feed entry", () =>
    Effect.gen(function*() {
      const { owner, repo, state } = yield* setup
      const hook = { webhookUrl: "https://hooks.genjobs.test/h" }
      const running = (yield* repo.submit(submitCommand(owner.id, hook))).job
      const pending = (yield* repo.submit(submitCommand(owner.id, { ...hook, createdAt: T0 + 1 }))).job
      yield* repo.claim({ workerId: "w", now: T0 + 2, leaseMs: 1_000, maxAttempts: 1 })
      const before = settled(state)
      const { calls, drivers } = recording(memoryJobDriver(state), {
        updateJob: () => Effect.succeed(false),
        updateProviderStates: () => Effect.succeed([]),
        finishHeld: () => Effect.succeed([])
      })
      const losing = yield* makeJobRepo(drivers)

      const cancelled = yield* Effect.flip(losing.cancel(pending.id, owner.id, T0 + 3))
      expect(cancelled).toMatchObject({ code: "JOB_CANNOT_BE_CANCELLED", message: "Only pending jobs can be cancelled; this one is pending" })
      expect(Option.isNone(yield* losing.complete(running.id, "w", [], T0 + 3))).toBe(true)
      expect(Option.isNone(yield* losing.fail(running.id, "w", { code: "GENERATION_FAILED", message: "x", type: "input_rejected", retryable: false }, T0 + 3))).toBe(true)
      expect(Option.isNone(yield* losing.fail(pending.id, null, { code: "INTERNAL_ERROR", message: "x", type: "internal", retryable: false }, T0 + 3))).toBe(true)
      expect(yield* losing.saveProviderState(running.id, "w", { phase: "starting", handle: null, starts: 1 })).toBe(false)
      // The running job's lease is used up: abandoning it loses too.
      expect(yield* losing.reap({ workerId: "r", now: T0 + 2_000, passMs: 1_000, maxAttempts: 1, limit: 10 })).toBe(0)

      expect(calls.filter((c) => c === "updateJob" || c === "updateProviderStates" || c === "finishHeld").length).toBeGreaterThanOrEqual(6)
      expect(calls.filter((c) => c === "postLedger" || c === "insertDeliveries")).toEqual([])
      expect(settled(state)).toEqual(before)
      expect(state.jobs.get(pending.id)?.status).toBe("pending")
      expect(state.jobs.get(running.id)?.status).toBe("processing")
    }))

  it.effect("answers that the store's write woke the claimers only where its one-write submit does", () =>
    Effect.gen(function*() {
      const { owner, state } = yield* setup
      const base = memoryJobDriver(state)
      for (const wakes of [true, false]) {
        const repo = yield* makeJobRepo({ ...base, store: { ...base.store, submitWakesClaimers: wakes } })
        const plain = yield* repo.submit(submitCommand(owner.id, { createdAt: T0 + (wakes ? 1 : 2) }))
        expect(plain._tag === "Created" && plain.claimersWoken === true).toBe(wakes)
        // A submit with a rate limit is decided in the transaction, which wakes no one itself.
        const limited = yield* repo.submit({
          ...submitCommand(owner.id, { createdAt: T0 + (wakes ? 3 : 4) }),
          rateLimits: { requestsPerMinute: 5, requestsPerDay: 0 }
        })
        expect(limited._tag === "Created" && limited.claimersWoken === true).toBe(false)
      }
    }))

  it.effect("abandons a job whose lease attempts are used up, with its message, a refund and a webhook row", () =>
    Effect.gen(function*() {
      const { owner, repo, state } = yield* setup
      const { job: j } = yield* repo.submit(submitCommand(owner.id, { webhookUrl: "https://hooks.genjobs.test/h" }))
      yield* repo.claim({ workerId: "dead", now: T0, leaseMs: 1_000, maxAttempts: 1 })
      expect(Option.isNone(yield* repo.claim({ workerId: "w", now: T0 + 1_000, leaseMs: 1_000, maxAttempts: 1 }))).toBe(true)
      expect(yield* repo.reap({ workerId: "r", now: T0 + 1_000, passMs: 1_000, maxAttempts: 1, limit: 10 })).toBe(1)
      expect(Option.getOrThrow(yield* repo.get(j.id))).toMatchObject({
        status: "failed",
        error: { code: "INTERNAL_ERROR", message: "The job's workers stopped responding; its cost was refunded", type: "internal", retryable: true },
        completedAt: T0 + 1_000,
        leaseOwner: null,
        leaseExpiresAt: null
      })
      expect(settled(state)).toEqual({ balance: 10_000, refunds: 1, deliveries: 1, changes: 1 })
      const [delivery] = [...state.deliveries.values()]
      expect(JSON.parse(delivery!.payload)).toMatchObject({ jobId: j.id, status: "failed", error: { code: "INTERNAL_ERROR" } })
    }))

  it.effect("refuses a submit for an account that no longer exists, writing nothing", () =>
    Effect.gen(function*() {
      const { state } = yield* setup
      const { calls, drivers } = recording(memoryJobDriver(state))
      const refused = yield* Effect.flip((yield* makeJobRepo(drivers)).submit(submitCommand("acc_gone" as AccountId)))
      expect(refused).toMatchObject({ code: "INVALID_API_KEY", message: "The account no longer exists" })
      // The one-write submit and then the conditional charge find no account, and nothing after them runs.
      expect(calls.filter((c) => writes.has(c))).toEqual(["submit", "chargeAccount"])
      expect(state.jobs.size).toBe(0)
      expect(state.ledger).toHaveLength(1)
    }))

  it.effect("writes only inside a transaction, but for the claim's and the provider state's one statement", () =>
    Effect.gen(function*() {
      const { owner, state } = yield* setup
      const { calls, drivers, outside } = recording(memoryJobDriver(state))
      const repo = yield* makeJobRepo(drivers)
      const hook = { webhookUrl: "https://hooks.genjobs.test/h" }
      const idempotency = { key: "k", requestHash: "h", notBefore: T0 - 1 }
      const done = (yield* repo.submit({ ...submitCommand(owner.id, hook), idempotency })).job
      yield* repo.submit({ ...submitCommand(owner.id), idempotency })
      yield* repo.submit({ ...submitCommand(owner.id, { createdAt: T0 + 1 }), rateLimits: { requestsPerMinute: 5, requestsPerDay: 0 } })
      yield* repo.claim({ workerId: "w", now: T0, leaseMs: 1_000, maxAttempts: 3 })
      yield* repo.reap({ workerId: "r", now: T0, passMs: 1_000, maxAttempts: 3, limit: 10 })
      yield* repo.renewLeases([{ id: done.id, workerId: "w" }], T0, 5_000)
      yield* repo.saveProviderState(done.id, "w", { phase: "starting", handle: null, starts: 1 })
      yield* repo.complete(done.id, "w", [], T0 + 1)
      const failed = (yield* repo.submit(submitCommand(owner.id, { ...hook, createdAt: T0 + 2 }))).job
      yield* repo.fail(failed.id, null, { code: "INTERNAL_ERROR", message: "x", type: "internal", retryable: false }, T0 + 3)
      const cancelled = (yield* repo.submit(submitCommand(owner.id, { createdAt: T0 + 4 }))).job
      yield* repo.cancel(cancelled.id, owner.id, T0 + 5)
      expect(new Set(calls.filter((c) => writes.has(c)))).toEqual(writes)
      expect(outside).toEqual([])
      expect(settled(state)).toEqual({ balance: 8_000, refunds: 2, deliveries: 2, changes: 3 })
    }))

  it.effect("with limited versions and none of their jobs pending, a claim reads whether one is and counts no room; one submitted then is claimed", () =>
    Effect.gen(function*() {
      const { owner, state } = yield* setup
      const { calls, drivers } = recording(memoryJobDriver(state))
      const repo = yield* makeJobRepo(drivers)
      const limits: LimitPlan = { scopes: [{ key: "p", maxInFlight: 1 }], versions: [{ model: "demo/limited", version: "v1", scopes: ["p"] }] }
      const claimed = (now: number) =>
        Effect.map(repo.claimBatch({ workerId: "w", now, leaseMs: 60_000, maxAttempts: 3, limit: 10, limits }), (jobs) => jobs.map((j) => j.id))
      const first = (yield* repo.submit(submitCommand(owner.id))).job
      // The first claim counts the room and finds no limited job pending; the next only asks.
      expect(yield* claimed(T0 + 1)).toEqual([first.id])
      const second = (yield* repo.submit(submitCommand(owner.id, { createdAt: T0 + 2 }))).job
      calls.length = 0
      expect(yield* claimed(T0 + 3)).toEqual([second.id])
      expect(calls).toEqual(["anyPending", "claimBatch"])
      // A limited job submitted now is found by that read, and claimed within its room.
      const limited = (yield* repo.submit(submitCommand(owner.id, { model: "demo/limited", createdAt: T0 + 4 }))).job
      calls.length = 0
      expect(yield* claimed(T0 + 5)).toEqual([limited.id])
      expect(calls).toEqual(["anyPending", "lockProviderLimits", "readLimitUsage", "pendingOf", "claimIds", "recordStarts", "claimBatch"])
      // Its room is full: the next claim counts it again (a job of it may be pending), and takes none.
      yield* repo.submit(submitCommand(owner.id, { model: "demo/limited", createdAt: T0 + 6 }))
      calls.length = 0
      expect(yield* claimed(T0 + 7)).toEqual([])
      expect(calls).toEqual(["lockProviderLimits", "readLimitUsage", "claimBatch"])
      // Another limited version with room and none pending says nothing of the full one's: the
      // claim after still counts the room, without asking first.
      const mixed: LimitPlan = {
        scopes: [...limits.scopes, { key: "q", maxInFlight: 5 }],
        versions: [...limits.versions, { model: "demo/other", version: "v1", scopes: ["q"] }]
      }
      for (const now of [T0 + 8, T0 + 9]) {
        calls.length = 0
        expect(yield* repo.claimBatch({ workerId: "w", now, leaseMs: 60_000, maxAttempts: 3, limit: 10, limits: mixed })).toEqual([])
        expect(calls).toEqual(["lockProviderLimits", "readLimitUsage", "pendingOf", "claimBatch"])
      }
    }))

  it.effect("ends jobs without a webhook in a write of their own: a failed delivery write fails only the jobs it held", () =>
    Effect.gen(function*() {
      const { owner, repo, state } = yield* setup
      const hooked = (yield* repo.submit(submitCommand(owner.id, { webhookUrl: "https://hooks.genjobs.test/h" }))).job
      const plain = (yield* repo.submit(submitCommand(owner.id, { createdAt: T0 + 1 }))).job
      yield* repo.claimBatch({ workerId: "w", now: T0 + 2, leaseMs: 1_000, maxAttempts: 3, limit: 2 })
      const base = memoryJobDriver(state)
      const outside: Array<string> = []
      let depth = 0
      const drivers: JobDrivers = {
        store: {
          ...base.store,
          transaction: (effect) =>
            base.store.transaction(Effect.suspend(() => {
              depth++
              return Effect.ensuring(effect, Effect.sync(() => depth--))
            })),
          insertDeliveries: () => Effect.fail(new StoreError({ message: "insert deliveries failed" }))
        },
        leases: {
          ...base.leases,
          finishHeld: (endings) => Effect.suspend(() => (depth === 0 && outside.push("finishHeld"), base.leases.finishHeld(endings))),
          // What the SQL drivers' statement does: finishHeld of the jobs without a webhook URL.
          finishHeldWithoutWebhook: (endings) =>
            base.leases.finishHeld(endings.filter((e) => state.jobs.get(e.id)?.webhookUrl === null))
        }
      }
      const split = yield* makeJobRepo(drivers)
      const [hookedEnd, plainEnd] = yield* Effect.all([
        Effect.exit(split.complete(hooked.id, "w", [], T0 + 3)),
        split.complete(plain.id, "w", [], T0 + 3)
      ], { concurrency: "unbounded" })

      expect(Option.getOrThrow(plainEnd)).toMatchObject({ id: plain.id, status: "completed", completedAt: T0 + 3 })
      expect(Exit.isFailure(hookedEnd) && Exit.findErrorOption(hookedEnd)).toMatchObject(Option.some({ _tag: "StoreError" }))
      // The hooked job's ending rolled back with its delivery: still held, to be completed again.
      expect(state.jobs.get(hooked.id)).toMatchObject({ status: "processing", leaseOwner: "w" })
      expect(outside).toEqual([])
      expect(settled(state)).toMatchObject({ deliveries: 0, changes: 1 })
      expect(Option.getOrThrow(yield* repo.complete(hooked.id, "w", [], T0 + 4))).toMatchObject({ status: "completed" })
      expect(settled(state)).toMatchObject({ deliveries: 1, changes: 2 })
    }))
})
