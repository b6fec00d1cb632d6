import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Metric, Scope } from "effect"
import { TestClock } from "effect/testing"
import { StoreError } from "../../src/domain/errors.js"
import type { RequestId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { JobFollow, make as makeJobFollow, waitEnd } from "../../src/services/JobFollow.js"
import { Jobs } from "../../src/services/Jobs.js"
import { Catalog } from "../../src/services/Catalog.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"
import { demoCatalog } from "../support/demoCatalog.js"

/** No job ever runs (no worker here): jobs stay pending until cancelled. */
const idle: GenerationProvider = { start: () => Effect.never, poll: () => Effect.never, cancel: () => Effect.void }

/** Waits for `effect` at most `ms` of real time (TestClock does not move by itself). */
const withinRealTime = <A, E>(ms: number, effect: Effect.Effect<A, E>) =>
  Effect.race(effect, Effect.promise(() => new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms))))

/**
 * Counts the fibers started under the effect it is given that are still alive, as a tracking
 * supervisor did (Effect 4 has none: the runtime reports each fiber's start and end to the
 * FiberRuntimeMetrics service its context carries).
 */
const liveFibers = () => {
  const fibers = { live: 0 }
  const service: Metric.FiberRuntimeMetricsService = {
    recordFiberStart: () => {
      fibers.live++
    },
    recordFiberEnd: () => {
      fibers.live--
    }
  }
  return { fibers, track: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, Metric.FiberRuntimeMetrics, service) }
}

const submitJobs = (count: number) =>
  Effect.gen(function*() {
    const jobs = yield* Jobs
    const caller = yield* demoCaller(1_000_000_000, count)
    // Without the demo catalog's per-minute limits: these tests submit many jobs at one instant.
    const catalog = demoCatalog()
    for (const model of catalog.models) for (const version of model.versions) version.rateLimits = { requestsPerMinute: 0, requestsPerDay: 0 }
    yield* (yield* Catalog).replace(catalog)
    const submitted = yield* Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => jobs.submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: `p${i}` } }, `req_${i}` as RequestId)
    )
    return { caller, jobs: submitted.map((s) => s.job) }
  })

/** A listener recording the statuses given, resolving `ended` at the end. */
const recorder = Effect.gen(function*() {
  const seen: Array<Job["status"]> = []
  const ended = yield* Deferred.make<void>()
  return {
    seen,
    ended,
    listener: {
      onJob: (job: Job) => void seen.push(job.status),
      onEnd: () => Deferred.doneUnsafe(ended, Effect.void)
    }
  }
})

/** Lets forked fibers run until they wait. */
const settle = Effect.forEach(Array.from({ length: 20 }), () => Effect.yieldNow, { discard: true })

describe("job watchers", () => {
  it.effect("a change wakes its watcher at once, the clock standing still (no sweep needed)", () =>
    Effect.gen(function*() {
      const follow = yield* JobFollow
      const { caller, jobs: [job] } = yield* submitJobs(1)
      const since = yield* follow.hintMark
      const { seen, ended, listener } = yield* recorder
      yield* follow.listen(job!.id, 1, listener, since)
      yield* (yield* Jobs).cancel(caller, job!.id)
      yield* withinRealTime(2_000, Deferred.await(ended))
      expect(seen).toEqual(["cancelled"])
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("a change between the caller's read and its joining is not missed", () =>
    Effect.gen(function*() {
      const follow = yield* JobFollow
      const { caller, jobs: [job] } = yield* submitJobs(1)
      // The caller marked, read the job pending, and the job was cancelled before it joined.
      const since = yield* follow.hintMark
      yield* (yield* Jobs).cancel(caller, job!.id)
      const { seen, ended, listener } = yield* recorder
      yield* follow.listen(job!.id, 1, listener, since)
      yield* withinRealTime(2_000, Deferred.await(ended))
      expect(seen).toEqual(["cancelled"])
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("a lost signal is caught by the sweep within 30 s, and a followed job is read no more often", () =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const { caller, jobs } = yield* submitJobs(40)
      const reads = new Map<string, number>()
      // A watcher that hears no hint at all (every signal lost), over a repo that counts its reads.
      const follow = yield* makeJobFollow.pipe(
        Effect.provideService(JobEvents, { ...(yield* JobEvents), subscribeAll: () => Effect.void }),
        Effect.provideService(JobRepo, {
          ...repo,
          getMany: (ids) => Effect.andThen(Effect.sync(() => ids.forEach((id) => reads.set(id, (reads.get(id) ?? 0) + 1))), repo.getMany(ids))
        })
      )
      const watched = yield* Effect.forEach(jobs, (job) =>
        Effect.gen(function*() {
          const since = yield* follow.hintMark
          const watcher = yield* recorder
          yield* follow.listen(job.id, 1, watcher.listener, since)
          return watcher
        }))
      const service = yield* Jobs
      yield* Effect.forEach(jobs, (job) => service.cancel(caller, job.id), { discard: true })
      yield* settle
      expect(watched.every((w) => w.seen.length === 0)).toBe(true)
      yield* TestClock.adjust("30 seconds")
      yield* withinRealTime(2_000, Effect.forEach(watched, (w) => Deferred.await(w.ended)))
      expect(watched.map((w) => w.seen)).toEqual(jobs.map(() => ["cancelled"]))
      // Once each in the 30 s, and spread: never all in one step of the sweep.
      expect([...reads.values()].every((n) => n === 1)).toBe(true)
      expect(reads.size).toBe(jobs.length)
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("re-reads a job nobody changes at most once per 30 s, spread over the period, a step's jobs in one statement", () =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const { jobs } = yield* submitJobs(60)
      const readAt: Array<number> = []
      const statements: Array<number> = []
      let now = 0
      const follow = yield* makeJobFollow.pipe(
        Effect.provideService(JobRepo, {
          ...repo,
          getMany: (ids) => Effect.andThen(Effect.sync(() => (statements.push(now), ids.forEach(() => readAt.push(now)))), repo.getMany(ids))
        })
      )
      yield* Effect.forEach(jobs, (job) =>
        Effect.flatMap(follow.hintMark, (since) => follow.listen(job.id, 1, { onJob: () => undefined, onEnd: () => undefined }, since)))
      for (now = 1; now <= 90; now++) {
        yield* TestClock.adjust("1 second")
        yield* settle
      }
      // 60 jobs over 90 s: three sweeps, 180 reads, never more than a few in one second.
      expect(readAt.length).toBe(180)
      const perSecond = new Map<number, number>()
      for (const second of readAt) perSecond.set(second, (perSecond.get(second) ?? 0) + 1)
      expect(Math.max(...perSecond.values())).toBeLessThanOrEqual(2)
      // One statement per sweep step, for however many jobs its slot holds.
      expect(statements.length).toBeLessThanOrEqual(90)
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("reads the jobs of watchers opened together many to a statement, never one each", () =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const { jobs } = yield* submitJobs(1_000)
      const statements: Array<number> = []
      let singleReads = 0
      const follow = yield* makeJobFollow.pipe(
        Effect.provideService(JobRepo, {
          ...repo,
          get: (id) => Effect.andThen(Effect.sync(() => singleReads++), repo.get(id)),
          getMany: (ids) => Effect.andThen(Effect.sync(() => void statements.push(ids.length)), repo.getMany(ids))
        })
      )
      const read = yield* Effect.forEach(jobs, (job) => follow.readForWatch(job.id), { concurrency: "unbounded" })
      expect(read.map((job) => job._tag === "Some" && job.value.id)).toEqual(jobs.map((job) => job.id))
      expect(singleReads).toBe(0)
      // The first alone, then the rest as they queued behind it, 500 to a statement.
      expect(statements.length).toBeLessThanOrEqual(4)
      expect(statements.reduce((a, b) => a + b, 0)).toBe(1_000)
      expect(yield* follow.readForWatch("job_unknown" as Job["id"])).toMatchObject({ _tag: "None" })
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("fails every open of a failed statement with its error, the statement not retried id by id", () =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const { jobs } = yield* submitJobs(50)
      let statements = 0
      const follow = yield* makeJobFollow.pipe(
        Effect.provideService(JobRepo, {
          ...repo,
          getMany: () => Effect.andThen(Effect.sync(() => statements++), Effect.fail(new StoreError({ message: "down" })))
        })
      )
      const failed = yield* Effect.forEach(jobs, (job) => Effect.flip(follow.readForWatch(job.id)), { concurrency: "unbounded" })
      expect(failed.every((error) => error._tag === "StoreError")).toBe(true)
      expect(statements).toBeLessThanOrEqual(3)
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("reads a hinted job before the jobs due in the sweep, which wait for it", () =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const { caller, jobs } = yield* submitJobs(300)
      const batches: Array<ReadonlyArray<string>> = []
      const gate = yield* Deferred.make<void>()
      const follow = yield* makeJobFollow.pipe(
        Effect.provideService(JobRepo, {
          ...repo,
          getMany: (ids) =>
            Effect.suspend(() => {
              batches.push(ids)
              // The first statement stays on its way until the test lets it go.
              return Effect.andThen(batches.length === 1 ? Deferred.await(gate) : Effect.void, repo.getMany(ids))
            })
        })
      )
      const watcher = yield* recorder
      // Round robin over 30 slots: the first job is swept last, 10 jobs in each slot.
      const hinted = jobs[0]!
      yield* follow.listen(hinted.id, 1, watcher.listener, yield* follow.hintMark)
      for (const job of jobs.slice(1)) yield* follow.listen(job.id, 1, { onJob: () => undefined, onEnd: () => undefined }, yield* follow.hintMark)
      // A sweep step's statement is on its way; two more steps come due behind it, then a change.
      yield* TestClock.adjust("1 second")
      yield* settle
      expect(batches.length).toBe(1)
      yield* TestClock.adjust("2 seconds")
      yield* (yield* Jobs).cancel(caller, hinted.id)
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      yield* withinRealTime(2_000, Deferred.await(watcher.ended))
      expect(watcher.seen).toEqual(["cancelled"])
      // The change is read next, alone, before the 20 jobs the sweep had queued.
      expect(batches[1]).toEqual([hinted.id])
      yield* settle
      expect(batches[2]).toHaveLength(20)
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("holds 1,000 waiting watchers with no fiber of their own: the count is the same for 10", () =>
    Effect.gen(function*() {
      const follow = yield* JobFollow
      const { caller, jobs } = yield* submitJobs(1_000)
      const fibersFor = (count: number) =>
        Effect.gen(function*() {
          const { fibers, track } = liveFibers()
          const scope = yield* Scope.make()
          const waits = yield* Effect.forEach(jobs.slice(0, count), (job, i) => {
            // Long-polls and status-stream listeners alike.
            const wait: Effect.Effect<unknown, unknown> = i % 2 === 0
              ? follow.awaitTerminal(job, 60)
              : follow.listen(job.id, 1, { onJob: () => undefined, onEnd: () => undefined }).pipe(Scope.provide(scope))
            return Effect.forkChild(track(wait))
          })
          yield* settle
          expect(follow.openCount()).toBe(count)
          const live = fibers.live
          yield* Effect.forEach(waits, Fiber.interrupt, { discard: true })
          yield* Scope.close(scope, Exit.void)
          yield* settle
          expect(follow.openCount()).toBe(0)
          return live
        })
      const few = yield* fibersFor(10)
      const many = yield* fibersFor(1_000)
      expect(many).toBe(few)
      // And the waits still end when their jobs do.
      const waits = yield* Effect.forEach(jobs.slice(0, 100), (job) => Effect.forkChild(follow.awaitTerminal(job, 60)))
      yield* settle
      const service = yield* Jobs
      yield* Effect.forEach(jobs.slice(0, 100), (job) => service.cancel(caller, job.id), { discard: true })
      const answered = yield* withinRealTime(5_000, Effect.forEach(waits, Fiber.join))
      expect(answered.map((job) => job.status)).toEqual(jobs.slice(0, 100).map(() => "cancelled"))
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("refuses a watcher beyond maxWatchers with 503 and Retry-After, and takes one again once another left", () =>
    Effect.gen(function*() {
      const follow = yield* JobFollow
      const { jobs: [a, b] } = yield* submitJobs(2)
      const first = yield* Effect.forkChild(follow.awaitTerminal(a!, 60))
      const scope = yield* Scope.make()
      yield* follow.listen(b!.id, 1, { onJob: () => undefined, onEnd: () => undefined }).pipe(Scope.provide(scope))
      yield* settle
      const refused = yield* Effect.flip(follow.awaitTerminal(b!, 60))
      expect(refused).toMatchObject({ code: "SERVICE_UNAVAILABLE", retryAfterSeconds: 5, details: { reason: "too_many_watchers" } })
      expect((yield* Effect.flip(Effect.scoped(follow.listen(a!.id, 1, { onJob: () => undefined, onEnd: () => undefined })))).code)
        .toBe("SERVICE_UNAVAILABLE")
      yield* Fiber.interrupt(first)
      const again = yield* Effect.forkChild(follow.awaitTerminal(a!, 1))
      yield* settle
      yield* TestClock.adjust("1 second")
      expect((yield* Fiber.join(again)).status).toBe("pending")
      yield* Scope.close(scope, Exit.void)
    }).pipe(Effect.provide(memoryEngine(idle, { maxWatchers: 2 }))))
})

describe("waitEnd", () => {
  it("answers waits under 10 s on time and spreads longer ones over their last tenth", () => {
    expect(waitEnd(1_000, 1, 0.99)).toBe(2_000)
    expect(waitEnd(1_000, 9, 0.99)).toBe(10_000)
    expect(waitEnd(0, 60, 0)).toBe(60_000)
    expect(waitEnd(0, 60, 0.999)).toBe(54_006)
    const ends = Array.from({ length: 1_000 }, (_, i) => waitEnd(0, 60, i / 1_000))
    expect(Math.min(...ends)).toBeGreaterThanOrEqual(54_000)
    expect(new Set(ends.map((end) => Math.floor(end / 1_000))).size).toBe(7)
  })
})
