import { Effect, Exit, ManagedRuntime, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { memoryQueue } from "../../entries/memory.js"
import type { JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { Worker } from "../../src/services/Worker.js"
import { AHEAD_PER_FIBER } from "../../src/services/worker/start.js"
import { Catalog } from "../../src/services/Catalog.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { memoryEngine } from "../support/engineLayer.js"
import { submitMany } from "../support/submitMany.js"
import { workerEngine } from "../support/workerEngine.js"

/**
 * A provider that finishes its first `quick` starts in the call and never answers the others;
 * it counts every start by job.
 */
const startsAfter = (quick: number) => {
  const starts = new Map<string, number>()
  let total = 0
  const provider: GenerationProvider = {
    start: (request) =>
      Effect.suspend(() => {
        starts.set(request.job.id, (starts.get(request.job.id) ?? 0) + 1)
        return ++total <= quick ? Effect.succeed({ _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const) : Effect.never
      }),
    poll: () => Effect.die("never polled"),
    cancel: () => Effect.void
  }
  return { provider, starts }
}

const FIBERS = 2

/** Starts a worker of FIBERS fibers and answers the most of `ids` it held processing at once until all completed. */
const mostProcessing = (ids: ReadonlyArray<JobId>) =>
  Effect.gen(function*() {
    const repo = yield* JobRepo
    const scope = yield* Scope.make()
    yield* (yield* Worker).start(FIBERS).pipe(Scope.provide(scope))
    let most = 0
    let done = 0
    while (done < ids.length) {
      const found = yield* repo.getMany(ids)
      most = Math.max(most, found.filter((job) => job.status === "processing").length)
      done = found.filter((job) => job.status === "completed").length
      yield* Effect.sleep("5 millis")
    }
    yield* Scope.close(scope, Exit.void)
    return most
  })

/** Jobs claimed ahead and put back by a drain: pending as submitted, never started. */
const expectPutBack = (byId: ReadonlyMap<JobId, Job>, ahead: ReadonlyArray<JobId>, starts: ReadonlyMap<string, number>) => {
  for (const id of ahead) {
    expect(byId.get(id)).toMatchObject({ status: "pending", attempts: 0, providerPhase: null, providerStarts: 0, leaseOwner: null, startedAt: null })
    expect(starts.has(id)).toBe(false)
  }
}

/** Those jobs taken again as first pickups and started once each. */
const expectStartedOnce = (byId: ReadonlyMap<JobId, Job>, ahead: ReadonlyArray<JobId>, starts: ReadonlyMap<string, number>) => {
  for (const id of ahead) {
    expect(starts.get(id)).toBe(1)
    expect(byId.get(id)).toMatchObject({ status: "processing", attempts: 1, providerStarts: 1 })
  }
}

/** Each start takes 120 ms: a slow run, past QUICK_RUN_MS. */
const slowProvider: GenerationProvider = {
  start: () => Effect.as(Effect.sleep("120 millis"), { _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const),
  poll: () => Effect.die("never polled"),
  cancel: () => Effect.void
}

describe("claiming ahead (docs/decisions.md, \"Claiming ahead on PostgreSQL\")", () => {
  it("a worker's shutdown puts its ready jobs back in the queue: pending, no attempt spent, never started, then run once elsewhere", async () => {
    const { provider, starts } = startsAfter(FIBERS)
    const runtime = ManagedRuntime.make(memoryEngine(provider, { leaseMs: 60_000, pollIntervalMs: 50, drainTimeoutMs: 200 }))
    try {
      await runtime.runPromise(Effect.gen(function*() {
        // The first quick runs, the fibers' next jobs, those claimed ahead, and two left pending.
        const ids = yield* submitMany(FIBERS * (2 + AHEAD_PER_FIBER) + 2)
        const repo = yield* JobRepo
        const worker = yield* Worker
        const jobs = () => Effect.map(repo.getMany(ids), (found) => new Map(found.map((job) => [job.id, job])))
        const scope = yield* Scope.make()
        yield* worker.start(FIBERS).pipe(Scope.provide(scope))
        // The first two finish in their start; the claim riding on their completions takes the next
        // two for the fibers and AHEAD_PER_FIBER more per fiber, which wait in the ready list (both
        // fibers hang in their starts).
        const claimed = (byId: Map<JobId, { readonly status: string }>) => ids.filter((id) => byId.get(id)!.status === "processing").length
        while (claimed(yield* jobs()) < 2 * FIBERS || starts.size < 2 * FIBERS) yield* Effect.sleep("5 millis")
        const before = yield* jobs()
        const ahead = ids.filter((id) => before.get(id)!.status === "processing" && !starts.has(id))
        expect(ahead).toHaveLength(FIBERS * AHEAD_PER_FIBER)
        yield* Scope.close(scope, Exit.void)

        const after = yield* jobs()
        expectPutBack(after, ahead, starts)
        // Another worker (this one's restart, a fiber for each) takes them as first pickups and
        // starts each once: they kept their places in the queue, before the jobs still pending.
        const again = yield* Scope.make()
        yield* worker.start(ahead.length).pipe(Scope.provide(again))
        while (!ahead.every((id) => starts.has(id))) yield* Effect.sleep("5 millis")
        expectStartedOnce(yield* jobs(), ahead, starts)
        yield* Scope.close(again, Exit.void)
      }))
    } finally {
      await runtime.dispose()
    }
  }, 30_000)

  it.each([
    { queue: "the store's own queue", broker: undefined },
    { queue: "the memory broker", broker: memoryQueue }
  ])("while runs are slow, nothing is claimed ahead ($queue): a worker holds no more jobs than its fibers, its first claim included", async ({ broker }) => {
    // Jobs claimed ahead would wait a whole run, unstartable by another process and refused a
    // cancel. Before any run ended nothing says runs are quick: the first claim takes the fibers' jobs only.
    const engine = await workerEngine(slowProvider, { leaseMs: 60_000, pollIntervalMs: 50, drainTimeoutMs: 2_000 }, { queue: broker })
    try {
      await engine.run(Effect.gen(function*() {
        expect(yield* mostProcessing(yield* submitMany(10))).toBeLessThanOrEqual(FIBERS)
      }))
    } finally {
      await engine.dispose()
    }
  }, 30_000)

  it("a ready list filled while runs were quick empties once they turn slow: then a worker holds no more jobs than its fibers", async () => {
    // The first starts finish in the call (quick runs: jobs are claimed ahead), the rest take
    // 100 ms each. Without the rule the store claimed one job for each ending and the ready list
    // kept its size, jobs waiting a whole run each, until the backlog was done.
    const QUICK = 12
    let started = 0
    const provider: GenerationProvider = {
      start: () =>
        ++started <= QUICK
          ? Effect.succeed({ _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const)
          : Effect.as(Effect.sleep("100 millis"), { _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const),
      poll: () => Effect.die("never polled"),
      cancel: () => Effect.void
    }
    const runtime = ManagedRuntime.make(memoryEngine(provider, { leaseMs: 60_000, pollIntervalMs: 50, drainTimeoutMs: 2_000 }))
    try {
      await runtime.runPromise(Effect.gen(function*() {
        const ids = yield* submitMany(QUICK + FIBERS * (1 + AHEAD_PER_FIBER) + 8)
        const repo = yield* JobRepo
        const worker = yield* Worker
        const scope = yield* Scope.make()
        yield* worker.start(FIBERS).pipe(Scope.provide(scope))
        let mostBefore = 0
        let mostAfter = 0
        let done = 0
        while (done < ids.length) {
          const found = yield* repo.getMany(ids)
          const processing = found.filter((job) => job.status === "processing").length
          done = found.filter((job) => job.status === "completed").length
          // The jobs claimed ahead as runs turned slow start as the first slow runs end.
          if (done >= QUICK + FIBERS * (1 + AHEAD_PER_FIBER)) mostAfter = Math.max(mostAfter, processing)
          else mostBefore = Math.max(mostBefore, processing)
          yield* Effect.sleep("5 millis")
        }
        // Jobs were claimed ahead while runs were quick (the case this guards)...
        expect(mostBefore).toBeGreaterThan(FIBERS)
        // ...and none once the slow runs emptied the ready list.
        expect(mostAfter).toBeLessThanOrEqual(FIBERS)
        yield* Scope.close(scope, Exit.void)
      }))
    } finally {
      await runtime.dispose()
    }
  }, 30_000)

  it("on a queue broker too: a worker's claim takes jobs ahead of its fibers, and its shutdown publishes them again, pending and never started, for another worker at once", async () => {
    const { provider, starts } = startsAfter(FIBERS)
    // A delivery comes back after 15 minutes and the relay publishes a job after 10: only the
    // drain's own publish brings the jobs back within the test.
    const engine = await workerEngine(provider, { leaseMs: 600_000, pollIntervalMs: 50, drainTimeoutMs: 200, queueRelayGraceMs: 600_000 }, { queue: memoryQueue })
    try {
      await engine.run(Effect.gen(function*() {
        const ids = yield* submitMany(FIBERS * (2 + AHEAD_PER_FIBER) + 2)
        const repo = yield* JobRepo
        const worker = yield* Worker
        const jobs = () => Effect.map(repo.getMany(ids), (found) => new Map(found.map((job) => [job.id, job])))
        const claimedAhead = (byId: Map<JobId, { readonly status: string }>) =>
          ids.filter((id) => byId.get(id)!.status === "processing" && !starts.has(id))
        const scope = yield* Scope.make()
        yield* worker.start(FIBERS).pipe(Scope.provide(scope))
        // The first two finish in their start, the next two hang in theirs; the claim took more
        // than the fibers, and those wait in the ready list, held and never started.
        while (starts.size < 2 * FIBERS || claimedAhead(yield* jobs()).length === 0) yield* Effect.sleep("5 millis")
        const ahead = claimedAhead(yield* jobs())
        expect(ahead.length).toBeLessThanOrEqual(FIBERS * AHEAD_PER_FIBER)
        yield* Scope.close(scope, Exit.void)

        const after = yield* jobs()
        expectPutBack(after, ahead, starts)
        // Published again, they queue behind the jobs never claimed: another worker with a fiber
        // for every job left takes them all.
        const left = ids.filter((id) => after.get(id)!.status === "pending")
        const again = yield* Scope.make()
        yield* worker.start(left.length).pipe(Scope.provide(again))
        const asked = Date.now()
        while (!ahead.every((id) => starts.has(id))) yield* Effect.sleep("5 millis")
        expect(Date.now() - asked).toBeLessThan(10_000)
        expectStartedOnce(yield* jobs(), ahead, starts)
        yield* Scope.close(again, Exit.void)
      }))
    } finally {
      await engine.dispose()
    }
  }, 30_000)

  it("on a queue broker, with limited versions in the plan, nothing is claimed ahead: a limited job would hold its provider's room while it waits", async () => {
    const engine = await workerEngine(startsAfter(1_000).provider, { leaseMs: 60_000, pollIntervalMs: 50, drainTimeoutMs: 2_000 }, { queue: memoryQueue })
    try {
      await engine.run(Effect.gen(function*() {
        const ids = yield* submitMany(40)
        // Every provider limited to ten generations at once: room for five times the fibers.
        const limited = demoCatalog()
        for (const model of limited.models) for (const version of model.versions) version.rateLimits = { requestsPerMinute: 0, requestsPerDay: 0 }
        for (const entry of limited.providers) entry["limits"] = { maxInFlight: 10 }
        yield* (yield* Catalog).replace(limited)
        // The fibers' runs and the jobs whose completions are on their way as the fibers run the
        // next (a slot frees as its completion is written): a few. Claiming ahead, the fibers'
        // and the jobs ahead filled the provider's room (ten, FIBERS * (1 + AHEAD_PER_FIBER)).
        expect(yield* mostProcessing(ids)).toBeLessThan(FIBERS * (1 + AHEAD_PER_FIBER))
      }))
    } finally {
      await engine.dispose()
    }
  }, 30_000)
})
