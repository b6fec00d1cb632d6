import { Context, Effect, Exit, Latch, Layer, ManagedRuntime, Metric, Option, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { StoreError } from "../../src/domain/errors.js"
import { providerPollLagSecondsOf, providerPollsOf, watchedGenerationsOf } from "../../src/observability/metricSeries.js"
import type { JobId } from "../../src/domain/ids.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { JobLogRepo } from "../../src/ports/JobLogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import type { EngineSettings } from "../../src/services/EngineConfig.js"
import { Worker } from "../../src/services/Worker.js"
import { engineOver } from "../support/engineLayer.js"
import { startedFibers } from "../support/fiberCount.js"
import { submitMany } from "../support/submitMany.js"
import { until } from "../support/waitFor.js"

/**
 * A provider whose generations run until the test lets them end: each is `Running` until
 * `endAfterPolls` polls (when set) or until `release` (all) or `done` (one handle) says it ended.
 * It counts starts, polls and the generations in flight at once (started, not yet seen ended).
 */
const heldProvider = (options: { readonly pollIntervalMs: number; readonly endAfterPolls?: number }) => {
  const state = {
    starts: 0,
    polls: 0,
    inFlight: 0,
    maxInFlight: 0,
    release: false,
    done: new Set<string>(),
    pollsOf: new Map<string, number>()
  }
  const provider: GenerationProvider = {
    pollIntervalMs: options.pollIntervalMs,
    start: () =>
      Effect.sync(() => {
        const id = `gen_${++state.starts}`
        state.inFlight++
        state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
        state.pollsOf.set(id, 0)
        return { _tag: "Started", handle: { id } } as const
      }),
    poll: (handle) =>
      Effect.sync(() => {
        state.polls++
        const polls = (state.pollsOf.get(handle.id) ?? 0) + 1
        state.pollsOf.set(handle.id, polls)
        const ends = state.release || state.done.has(handle.id) || (options.endAfterPolls !== undefined && polls >= options.endAfterPolls)
        if (!ends) return { _tag: "Running" } as const
        state.inFlight--
        return { _tag: "Succeeded", outputs: [] } as const
      }),
    cancel: () => Effect.void
  }
  return { provider, state }
}

/** Renewals the test switches off: a lease is then lost once its end passes. */
const renewals = { fail: false }
/** The store's writes of provider progress and logs wait while a test holds this closed. */
const reportWrites = Latch.makeUnsafe(true)
const failingRenewals = Layer.effectContext(Effect.gen(function*() {
  const context = yield* Effect.context<Layer.Success<typeof layerMemoryStores>>()
  const repo = Context.get(context, JobRepo)
  const logs = Context.get(context, JobLogRepo)
  return Context.add(context, JobRepo, {
    ...repo,
    renewLeases: (leases, now, leaseMs) => (renewals.fail ? Effect.fail(new StoreError({ message: "store down" })) : repo.renewLeases(leases, now, leaseMs))
  }).pipe(Context.add(JobLogRepo, { ...logs, record: (reports) => Effect.andThen(reportWrites.await, logs.record(reports)) }))
})).pipe(Layer.provide(layerMemoryStores))

const runtimes: Array<ManagedRuntime.ManagedRuntime<unknown, unknown>> = []
afterAll(async () => {
  for (const runtime of runtimes) await runtime.dispose()
})

const engine = (provider: GenerationProvider, settings: Partial<EngineSettings>) => {
  const runtime = ManagedRuntime.make(engineOver(failingRenewals, provider, { leaseMs: 60_000, pollIntervalMs: 50, ...settings }))
  runtimes.push(runtime as ManagedRuntime.ManagedRuntime<unknown, unknown>)
  return runtime
}

const statusOf = (id: JobId) => Effect.map(JobRepo.use((repo) => repo.get(id)), (job) => Option.getOrThrow(job).status)

const allCompleted = (ids: ReadonlyArray<JobId>) =>
  Effect.gen(function*() {
    const repo = yield* JobRepo
    for (const id of ids) if (Option.getOrThrow(yield* repo.get(id)).status !== "completed") return false
    return true
  })

/**
 * Holds `n` generations on the watch list of one worker (WORKER_CONCURRENCY n), polled every
 * 200 ms, for two more rounds of polls once all were started and polled, then lets them end and
 * waits for every job to complete. Answers the fibers the worker started meanwhile.
 */
const fibersToWatch = async (n: number) => {
  const { provider, state } = heldProvider({ pollIntervalMs: 200 })
  // Timers that fork (the lease keeper's tick, the reaper's pass, the claimer's wait once the queue ran dry) far
  // apart: the larger run takes longer on a loaded machine, and only fibers per generation count.
  const runtime = engine(provider, { leaseMs: 600_000, pollIntervalMs: 60_000, reapIntervalMs: 600_000 })
  return await runtime.runPromise(Effect.gen(function*() {
    const ids = yield* submitMany(n)
    const { count, counter } = startedFibers()
    const scope = yield* Scope.make()
    yield* (yield* Worker).start(n).pipe(count, Scope.provide(scope))
    yield* until("every generation to start and be polled", () => state.starts === n && state.polls >= n, 120_000)
    yield* until("two more rounds of polls", () => state.polls >= 3 * n, 120_000)
    const watching = counter.started
    expect(state.maxInFlight).toBe(n)
    state.release = true
    yield* until("every job to complete", () => allCompleted(ids), 120_000)
    const started = counter.started
    yield* Scope.close(scope, Exit.void)
    expect(state.starts).toBe(n)
    return { watching, started }
  }))
}

describe("the watch list", () => {
  it("starts the same fibers to hold 10,000 generations in flight as 1,000: a waiting generation is a record, not a fiber", async () => {
    const few = await fibersToWatch(1_000)
    const many = await fibersToWatch(10_000)
    // Runners (at most 256 whatever the concurrency), the claimer, the reaper, the
    // relay, the lease keeper, the watch list's subscription, dispatcher and pollers (one
    // provider), and the claimer's wait once the queue ran dry.
    // A fiber per generation would add 9,000; what is left differs by 10 to 25 between runs (forks
    // of the store's and the engine's own passes over the longer run on a loaded machine).
    expect(few.started).toBeLessThan(400)
    expect(Math.abs(many.watching - few.watching)).toBeLessThanOrEqual(40)
    expect(Math.abs(many.started - few.started)).toBeLessThanOrEqual(40)
  }, 300_000)

  it("never holds more generations in flight than WORKER_CONCURRENCY, and runs them all; the watch list's metrics count them", async () => {
    const { provider, state } = heldProvider({ pollIntervalMs: 20, endAfterPolls: 3 })
    const runtime = engine(provider, {})
    await runtime.runPromise(Effect.gen(function*() {
      const ids = yield* submitMany(300)
      const pollsBefore = (yield* Metric.value(providerPollsOf("demo"))).count
      const lagsBefore = (yield* Metric.value(providerPollLagSecondsOf("demo"))).count
      const watchedBefore = (yield* Metric.value(watchedGenerationsOf("demo"))).value
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(50).pipe(Scope.provide(scope))
      yield* until("every job to complete", () => allCompleted(ids), 120_000)
      yield* Scope.close(scope, Exit.void)
      // Three polls each, each with its lag; every generation left the list.
      expect((yield* Metric.value(providerPollsOf("demo"))).count - pollsBefore).toBe(900)
      expect((yield* Metric.value(providerPollLagSecondsOf("demo"))).count - lagsBefore).toBe(900)
      expect((yield* Metric.value(watchedGenerationsOf("demo"))).value).toBe(watchedBefore)
    }))
    expect(state.starts).toBe(300)
    // The cap was reached, and never passed, though runners are free while generations wait.
    expect(state.maxInFlight).toBe(50)
  }, 180_000)

  it("a provider callback's hint polls a watched generation at once, not at its next interval", async () => {
    const { provider, state } = heldProvider({ pollIntervalMs: 600_000 })
    const runtime = engine(provider, {})
    await runtime.runPromise(Effect.gen(function*() {
      const [id] = yield* submitMany(1)
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(4).pipe(Scope.provide(scope))
      yield* until("the first poll", () => state.polls === 1)
      state.done.add("gen_1")
      yield* (yield* JobEvents).publish([id!])
      // Its next poll was ten minutes away: only the hint can have brought it.
      yield* until("the job to complete", () => Effect.map(statusOf(id!), (status) => status === "completed"), 10_000)
      expect(state.polls).toBe(2)
      yield* Scope.close(scope, Exit.void)
    }))
  }, 60_000)

  it("a poll whose progress is written is not polled again for its own hint: the next poll waits its interval", async () => {
    // gen_1 reports more progress on every poll and asks for its next one in ten minutes; gen_2
    // is polled every 30 ms, reporting nothing: the ticks of the list that a second poll of
    // gen_1, were it due at once, would have gone out in.
    const polls = { one: 0, two: 0 }
    let starts = 0
    const provider: GenerationProvider = {
      start: () => Effect.sync(() => ({ _tag: "Started", handle: { id: `gen_${++starts}` } } as const)),
      poll: (handle) =>
        Effect.sync(() => {
          if (handle.id === "gen_1") return { _tag: "Running", progress: Math.min(90, ++polls.one * 10), pollAfterMs: 600_000 } as const
          polls.two++
          return { _tag: "Running", pollAfterMs: 30 } as const
        }),
      cancel: () => Effect.void
    }
    // Neither generation ends: the worker's drain at the end is not waited out.
    const runtime = engine(provider, { drainTimeoutMs: 100 })
    await runtime.runPromise(Effect.gen(function*() {
      const ids = yield* submitMany(2)
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(4).pipe(Scope.provide(scope))
      const progressed = Effect.gen(function*() {
        const repo = yield* JobRepo
        for (const id of ids) if (Option.getOrThrow(yield* repo.get(id)).providerProgress === 10) return true
        return false
      })
      yield* until("the first poll's progress to be written", () => progressed)
      const from = polls.two
      yield* until("five more polls of the other generation", () => polls.two >= from + 5)
      expect(polls.one).toBe(1)
      yield* Scope.close(scope, Exit.void)
    }))
  }, 60_000)

  it("a poll's progress and lines do not hold its poller while the store writes them, and the generation's end waits for them", async () => {
    // One generation polled every 20 ms, its whole log on every answer (a line more each poll),
    // until the test lets it end.
    const state = { polls: 0, ends: false }
    const provider: GenerationProvider = {
      start: () => Effect.succeed({ _tag: "Started", handle: { id: "gen_1" } } as const),
      poll: () =>
        Effect.sync(() => {
          state.polls++
          if (state.ends) return { _tag: "Succeeded", outputs: [] } as const
          return { _tag: "Running", progress: Math.min(90, state.polls), logs: Array.from({ length: state.polls }, (_, i) => `line ${i + 1}`), pollAfterMs: 20 } as const
        }),
      cancel: () => Effect.void
    }
    const runtime = engine(provider, {})
    await runtime.runPromise(Effect.gen(function*() {
      reportWrites.closeUnsafe()
      const [id] = yield* submitMany(1)
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(4).pipe(Scope.provide(scope))
      // The first poll's write waits in the store: the generation is polled on meanwhile.
      yield* until("five polls while the first report waits", () => state.polls >= 5)
      state.ends = true
      const seen = state.polls
      yield* until("the poll that finds the end", () => state.polls > seen)
      // Its end is not written before the lines of its running polls.
      yield* Effect.sleep("100 millis")
      expect(yield* statusOf(id!)).toBe("processing")
      reportWrites.openUnsafe()
      yield* until("the job to complete", () => Effect.map(statusOf(id!), (status) => status === "completed"))
      const lines = yield* JobLogRepo.use((logs) => logs.lines(id!, 0, 100))
      expect(lines.map((line) => line.line)).toEqual(Array.from({ length: seen }, (_, i) => `line ${i + 1}`))
      yield* Scope.close(scope, Exit.void)
    }))
  }, 60_000)

  it("a lost lease drops the generation from the watch list: no more polls, the job left for the next claim", async () => {
    const { provider, state } = heldProvider({ pollIntervalMs: 50 })
    const runtime = engine(provider, { leaseMs: 600 })
    await runtime.runPromise(Effect.gen(function*() {
      const [id] = yield* submitMany(1)
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(4).pipe(Scope.provide(scope))
      yield* until("a few polls", () => state.polls >= 3)
      renewals.fail = true
      // Polled every 50 ms until the lease's last known end (600 ms after its last renewal) passes.
      const before = state.polls
      yield* until("the polls to stop", () => {
        const seen = state.polls
        return Effect.map(Effect.sleep("300 millis"), () => state.polls === seen && seen > before)
      }, 10_000)
      const stopped = state.polls
      yield* Effect.sleep("300 millis")
      expect(state.polls).toBe(stopped)
      expect(yield* statusOf(id!)).toBe("processing")
      expect(state.starts).toBe(1)
      renewals.fail = false
      yield* Scope.close(scope, Exit.void)
    }))
  }, 60_000)
})
