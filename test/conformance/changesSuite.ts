import { describe, expect, it } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { type ChangeEntry, type ChangePosition, comparePositions, FEED_START, nextAfter } from "../../src/domain/change.js"
import type { AccountId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { AccountRepo } from "../../src/ports/AccountRepo.js"
import { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { createAccount, job, NO_LIMITS, T0 } from "./fixtures.js"

export type ChangeStores = AccountRepo | JobRepo | ChangeFeed

const submitted = (accountId: AccountId, overrides: Partial<Job> = {}) =>
  Effect.gen(function*() {
    const j = job(accountId, overrides)
    yield* (yield* JobRepo).submit({ job: j, maxConcurrentJobs: 100, rateLimits: NO_LIMITS })
    return j
  })

/** Submits a job and has worker `w` claim it (the only pending job). */
const running = (accountId: AccountId, workerId: string, now: number) =>
  Effect.gen(function*() {
    const j = yield* submitted(accountId)
    const claimed = yield* (yield* JobRepo).claim({ workerId, now, leaseMs: 1_000, maxAttempts: 3 })
    expect(Option.getOrThrow(claimed).id).toBe(j.id)
    return j
  })

/** Every entry of the account (or all), page by page as a client follows the cursor. */
const readAll = (accountId: AccountId | undefined, limit: number, from: ChangePosition = FEED_START) =>
  Effect.gen(function*() {
    const feed = yield* ChangeFeed
    const entries: Array<ChangeEntry> = []
    let after = from
    for (;;) {
      const read = yield* feed.read({ accountId, after, upTo: undefined, limit })
      entries.push(...read.entries)
      const next = nextAfter(after, read, limit)
      expect(comparePositions(next, after)).toBeGreaterThanOrEqual(0)
      after = next
      if (read.entries.length < limit) return { entries, after }
    }
  })

/**
 * `readAll` until `count` entries came, reading on from where it stopped: on PostgreSQL an entry
 * is served once every older transaction of the server has ended, so on a shared server (other
 * suites' transactions) it can take a moment to appear. It is never lost or repeated meanwhile.
 */
const readCount = (accountId: AccountId | undefined, limit: number, count: number, from: ChangePosition = FEED_START) =>
  Effect.gen(function*() {
    const entries: Array<ChangeEntry> = []
    let after = from
    const deadline = Date.now() + 30_000
    for (;;) {
      const read = yield* readAll(accountId, limit, after)
      entries.push(...read.entries)
      after = read.after
      if (entries.length >= count || Date.now() > deadline) return { entries, after }
      yield* Effect.sleep("50 millis")
    }
  })

/**
 * The changes feed: one entry per ending, written with the ending on every path, read per
 * account in feed order, paged without loss or repeat, and purged from the old end.
 */
export const runChangesConformance = (name: string, makeLayer: () => Layer.Layer<ChangeStores, unknown>) => {
  const test = (title: string, body: () => Effect.Effect<void, unknown, ChangeStores>) =>
    it.live(title, () => Effect.provide(body(), makeLayer()))

  describe(`${name}: changes feed`, () => {
    test("every ending path writes one entry with the ending, in the order they committed; nothing else does", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const owner = yield* createAccount(100_000)
        const completed = yield* running(owner.id, "w1", T0)
        Option.getOrThrow(yield* repo.complete(completed.id, "w1", [{ url: "https://files.test/a.png", type: "image" }], T0 + 10))
        const failed = yield* running(owner.id, "w2", T0 + 20)
        const error = { code: "GENERATION_FAILED" as const, message: "refused", type: "input_rejected" as const, retryable: false }
        Option.getOrThrow(yield* repo.fail(failed.id, "w2", error, T0 + 30))
        const cancelled = yield* submitted(owner.id)
        yield* repo.cancel(cancelled.id, owner.id, T0 + 40)
        // Abandoned by the reaper once its last attempt's lease expired.
        const abandoned = yield* submitted(owner.id)
        yield* repo.claim({ workerId: "w3", now: T0 + 50, leaseMs: 1_000, maxAttempts: 1 })
        expect(yield* repo.reap({ workerId: "r", now: T0 + 2_000, passMs: 5_000, maxAttempts: 1, limit: 10 })).toBe(1)
        // Still pending or running: no entry.
        yield* submitted(owner.id)
        yield* submitted(owner.id)
        expect(Option.isSome(yield* repo.claim({ workerId: "w4", now: T0 + 3_000, leaseMs: 1_000, maxAttempts: 3 }))).toBe(true)

        // Races lost write nothing: a second end of an ended job, another worker's end.
        expect(Option.isNone(yield* repo.complete(completed.id, "w1", [], T0 + 60))).toBe(true)
        expect(Option.isNone(yield* repo.fail(failed.id, "w2", error, T0 + 60))).toBe(true)
        expect(yield* Effect.flip(repo.cancel(cancelled.id, owner.id, T0 + 60))).toMatchObject({ code: "JOB_CANNOT_BE_CANCELLED" })

        const { entries } = yield* readCount(owner.id, 100, 4)
        expect(entries.map((e) => [e.jobId, e.status, e.endedAt, e.costMicroCents, e.refundedMicroCents])).toEqual([
          [completed.id, "completed", T0 + 10, 1_000, 0],
          [failed.id, "failed", T0 + 30, 1_000, 1_000],
          [cancelled.id, "cancelled", T0 + 40, 1_000, 1_000],
          [abandoned.id, "failed", T0 + 2_000, 1_000, 1_000]
        ])
        expect(entries[0]).toMatchObject({ accountId: owner.id, requestId: completed.requestId, model: "demo/text", version: "v1", error: null })
        expect(entries[1]!.error).toEqual(error)
        expect(entries[3]!.error).toMatchObject({ code: "INTERNAL_ERROR" })
        for (let i = 1; i < entries.length; i++) expect(comparePositions(entries[i - 1]!.position, entries[i]!.position)).toBeLessThan(0)
      }))

    test("an account reads its own entries only; pages follow the cursor without loss or repeat", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const mine = yield* createAccount(100_000)
        const theirs = yield* createAccount(100_000)
        const ended: Array<string> = []
        for (let i = 0; i < 7; i++) {
          const j = yield* submitted(i % 3 === 2 ? theirs.id : mine.id)
          yield* repo.cancel(j.id, j.accountId, T0 + i)
          if (j.accountId === mine.id) ended.push(j.id)
        }
        for (const limit of [1, 2, 3, 100]) {
          const { after, entries } = yield* readCount(mine.id, limit, ended.length)
          expect(entries.map((e) => e.jobId)).toEqual(ended)
          expect(entries.every((e) => e.accountId === mine.id)).toBe(true)
          // A client at the end sees nothing more until another ending, then only that one.
          expect((yield* readAll(mine.id, limit, after)).entries).toEqual([])
          const more = yield* submitted(mine.id)
          yield* repo.cancel(more.id, mine.id, T0 + 100)
          ended.push(more.id)
          expect((yield* readCount(mine.id, limit, 1, after)).entries.map((e) => e.jobId)).toEqual([more.id])
        }
        const everyone = yield* readCount(undefined, 3, ended.length + 2)
        expect(everyone.entries.filter((e) => e.accountId === theirs.id)).toHaveLength(2)
        expect(everyone.entries).toHaveLength(ended.length + 2)
      }))

    test("a read bounded by upTo stops there; limit 0 answers the settled position alone", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const feed = yield* ChangeFeed
        const owner = yield* createAccount(100_000)
        for (let i = 0; i < 4; i++) {
          const j = yield* submitted(owner.id)
          yield* repo.cancel(j.id, owner.id, T0 + i)
        }
        const all = (yield* readCount(owner.id, 10, 4)).entries
        const bounded = yield* feed.read({ accountId: owner.id, after: FEED_START, upTo: all[1]!.position, limit: 10 })
        expect(bounded.entries.map((e) => e.jobId)).toEqual(all.slice(0, 2).map((e) => e.jobId))
        const settled = yield* feed.read({ accountId: undefined, after: FEED_START, upTo: undefined, limit: 0 })
        expect(settled.entries).toEqual([])
        expect(comparePositions(settled.settled, all[3]!.position)).toBeGreaterThanOrEqual(0)
        // Nothing comes after the settled position until another ending.
        expect((yield* readAll(owner.id, 10, settled.settled)).entries).toEqual([])
      }))

    test("purge removes entries that ended before the cutoff, oldest first, a batch at a time", () =>
      Effect.gen(function*() {
        const repo = yield* JobRepo
        const feed = yield* ChangeFeed
        const owner = yield* createAccount(100_000)
        for (let i = 0; i < 6; i++) {
          const j = yield* submitted(owner.id)
          yield* repo.cancel(j.id, owner.id, T0 + i * 1_000)
        }
        expect(yield* feed.purge(T0 + 3_500, 2)).toBe(2)
        expect(yield* feed.purge(T0 + 3_500, 2)).toBe(2)
        expect(yield* feed.purge(T0 + 3_500, 2)).toBe(0)
        const left = (yield* readCount(owner.id, 10, 2)).entries
        expect(left.map((e) => e.endedAt)).toEqual([T0 + 4_000, T0 + 5_000])
        // A cursor from before the purge reads on after it.
        const more = yield* submitted(owner.id)
        yield* repo.cancel(more.id, owner.id, T0 + 9_000)
        expect((yield* readCount(owner.id, 10, 1, left[1]!.position)).entries.map((e) => e.jobId)).toEqual([more.id])
      }))
  })
}
