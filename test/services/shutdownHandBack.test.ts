/**
 * A worker's shutdown with generations waiting at their provider: their leases are handed back
 * at once (the drain does not wait for them), and another worker resumes polling each, with no
 * second start; a run still inside its provider start gets the drain as before.
 */
import { Deferred, Effect, Exit, Fiber, ManagedRuntime, Option, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { memoryQueue, memoryStore } from "../../entries/memory.js"
import { postgresStore } from "../../entries/postgres.js"
import type { JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import type { EngineSettings } from "../../src/services/EngineConfig.js"
import { ProviderHealth } from "../../src/services/ProviderHealth.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, engineOver } from "../support/engineLayer.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { submitMany } from "../support/submitMany.js"
import { until } from "../support/waitFor.js"
import { workerEngine } from "../support/workerEngine.js"

/**
 * Generations that run until the test ends them (`release`, or `done` by handle id), polled
 * every ten minutes unless a callback's hint brings the poll forward. The start of the job whose
 * prompt is `stalls` waits for `stalled` to be opened.
 */
const heldProvider = (stalls?: string) => {
  const state = { starts: 0, polls: 0, release: false, done: new Set<string>(), stallEntered: false, gatePolls: false, gated: 0 }
  const stalled = Deferred.makeUnsafe<void>()
  /** While `gatePolls` is set, polls wait for this to open before they answer. */
  const pollGate = Deferred.makeUnsafe<void>()
  const provider: GenerationProvider = {
    pollIntervalMs: 600_000,
    start: (request) =>
      Effect.suspend(() => {
        const id = `gen_${++state.starts}`
        if (request.input.prompt !== stalls) return Effect.succeed({ _tag: "Started", handle: { id } } as const)
        state.stallEntered = true
        return Effect.as(Deferred.await(stalled), { _tag: "Started", handle: { id } } as const)
      }),
    poll: (handle) =>
      Effect.suspend(() => {
        state.polls++
        const answer = Effect.sync(() =>
          state.release || state.done.has(handle.id) ? { _tag: "Succeeded", outputs: [] } as const : { _tag: "Running" } as const
        )
        if (!state.gatePolls) return answer
        state.gated++
        return Effect.andThen(Deferred.await(pollGate), answer)
      }),
    cancel: () => Effect.void
  }
  return { provider, state, stalled, pollGate }
}

const pgUrl = await freshPostgresUrl()

const runtimes: Array<ManagedRuntime.ManagedRuntime<unknown, unknown>> = []
afterAll(async () => {
  for (const runtime of runtimes) await runtime.dispose()
})

/** One store shared by the workers a test starts, each as another process would (its own leases and watch list). Leases of ten minutes: only a hand-back makes a job claimable within a test. */
const engine = (provider: GenerationProvider, settings: Partial<EngineSettings>) => {
  const runtime = ManagedRuntime.make(engineOver(layerMemoryStores, provider, { leaseMs: 600_000, pollIntervalMs: 50, ...settings }))
  runtimes.push(runtime as ManagedRuntime.ManagedRuntime<unknown, unknown>)
  return runtime
}

const jobsOf = (ids: ReadonlyArray<JobId>) =>
  Effect.flatMap(JobRepo, (repo) => Effect.forEach(ids, (id) => Effect.map(repo.get(id), Option.getOrThrow)))

const every = (ids: ReadonlyArray<JobId>, test: (job: Job) => boolean) => Effect.map(jobsOf(ids), (jobs) => jobs.every(test))

/** A worker of `concurrency` fibers started in a scope of its own; answers its scope's close. */
const startWorker = (concurrency: number) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* (yield* Worker).start(concurrency).pipe(Scope.provide(scope))
    return Scope.close(scope, Exit.void)
  })

const handedBack = (job: Job) => job.status === "processing" && job.leaseOwner === null && job.attempts === 0 && job.providerHandle !== null

describe("a worker's shutdown with generations in flight", () => {
  it("hands back 1,000 watched generations at once, well within the drain timeout; a second worker resumes each, no second start, callbacks landing", async () => {
    const n = 1_000
    const { provider, state } = heldProvider()
    const runtime = engine(provider, { drainTimeoutMs: 60_000 })
    await runtime.runPromise(Effect.gen(function*() {
      const ids = yield* submitMany(n)
      const stopFirst = yield* startWorker(n)
      yield* until("every generation to start and be polled", () => state.starts === n && state.polls >= n, 120_000)
      const asked = Date.now()
      yield* stopFirst
      const stoppedMs = Date.now() - asked
      // The drain's 60 s were not waited out: nothing was waited for but the hand-back's writes.
      expect(stoppedMs).toBeLessThan(10_000)
      expect(yield* every(ids, handedBack)).toBe(true)
      // Nothing of the stopped worker stays counted in flight on the provider's credentials:
      // the next worker of this engine starts with the whole of each credential's room.
      const credentials = yield* (yield* ProviderHealth).snapshot
      expect(credentials.length).toBeGreaterThan(0)
      expect(credentials.map((c) => c.inFlight)).toEqual(credentials.map(() => 0))
      const polls = state.polls
      yield* Effect.sleep("100 millis")
      expect(state.polls).toBe(polls)

      // A callback for a job nobody holds now: its end is found by the first poll of the worker that resumes it.
      const [first] = yield* jobsOf([ids[0]!])
      state.done.add(first!.providerHandle!.id)
      yield* (yield* JobEvents).publish([first!.id])
      const stopSecond = yield* startWorker(n)
      yield* until("the first job to complete", () => every([first!.id], (job) => job.status === "completed"), 30_000)
      // The others are polled again in ten minutes: their callbacks bring their polls forward.
      state.release = true
      yield* (yield* JobEvents).publish(ids)
      yield* until("every job to complete", () => every(ids, (job) => job.status === "completed"), 60_000)
      expect(state.starts).toBe(n)
      expect(yield* every(ids, (job) => job.attempts === 1 && job.providerStarts === 1)).toBe(true)
      yield* stopSecond
    }))
  }, 300_000)

  it("a run inside its provider start gets the drain; once it is watched it is handed back too", async () => {
    const { provider, stalled, state } = heldProvider("p2")
    const runtime = engine(provider, { drainTimeoutMs: 60_000 })
    await runtime.runPromise(Effect.gen(function*() {
      const ids = yield* submitMany(3)
      const stopFirst = yield* startWorker(4)
      yield* until("two generations watched and the third inside its start", () => state.polls >= 2 && state.stallEntered)
      const stopping = yield* Effect.forkChild(stopFirst)
      yield* until("the watched two to be handed back", () => every(ids.slice(0, 2), handedBack))
      // The third is still this worker's, its start waited for.
      yield* Effect.sleep("200 millis")
      expect(stopping.pollUnsafe()).toBeUndefined()
      const [starting] = yield* jobsOf([ids[2]!])
      expect(starting).toMatchObject({ status: "processing", attempts: 1, providerHandle: null })
      expect(starting!.leaseOwner).not.toBeNull()
      const answered = Date.now()
      yield* Deferred.succeed(stalled, undefined)
      yield* Fiber.join(stopping)
      expect(Date.now() - answered).toBeLessThan(10_000)
      expect(yield* every(ids, handedBack)).toBe(true)

      state.release = true
      const stopSecond = yield* startWorker(4)
      yield* until("every job to complete", () => every(ids, (job) => job.status === "completed"))
      expect(state.starts).toBe(3)
      yield* stopSecond
    }))
  }, 120_000)

  it("a poll in flight at the shutdown is answered first: an end it finds is written, a generation still running is handed back", async () => {
    const { pollGate, provider, state } = heldProvider()
    const runtime = engine(provider, { drainTimeoutMs: 60_000 })
    await runtime.runPromise(Effect.gen(function*() {
      const ids = yield* submitMany(2)
      const stopFirst = yield* startWorker(4)
      yield* until("both generations polled", () => state.polls >= 2)
      // Their next polls are brought forward by callbacks and wait at the provider.
      state.gatePolls = true
      yield* (yield* JobEvents).publish(ids)
      yield* until("both polls in flight", () => state.gated === 2)
      const stopping = yield* Effect.forkChild(stopFirst)
      yield* Effect.sleep("200 millis")
      expect(stopping.pollUnsafe()).toBeUndefined()
      expect(yield* every(ids, (job) => job.leaseOwner !== null)).toBe(true)
      const [ending] = yield* jobsOf([ids[0]!])
      state.done.add(ending!.providerHandle!.id)
      yield* Deferred.succeed(pollGate, undefined)
      yield* Fiber.join(stopping)
      const [ended, running] = yield* jobsOf(ids)
      expect(ended!.status).toBe("completed")
      expect(handedBack(running!)).toBe(true)
    }))
  }, 60_000)

  it("a start that does not answer within the drain timeout is cut off as before: its job left to its lease", async () => {
    const { provider, state } = heldProvider("p1")
    const runtime = engine(provider, { drainTimeoutMs: 300 })
    await runtime.runPromise(Effect.gen(function*() {
      const ids = yield* submitMany(2)
      const stopFirst = yield* startWorker(4)
      yield* until("one generation watched and the other inside its start", () => state.polls >= 1 && state.stallEntered)
      const asked = Date.now()
      yield* stopFirst
      expect(Date.now() - asked).toBeGreaterThanOrEqual(290)
      const [watched, starting] = yield* jobsOf(ids)
      expect(handedBack(watched!)).toBe(true)
      expect(starting).toMatchObject({ status: "processing", attempts: 1, providerHandle: null })
      expect(starting!.leaseOwner).not.toBeNull()
    }))
  }, 60_000)

  it.each([
    // Deliveries held 15 minutes and a relay grace of a minute: only the hand-back's publish brings the job back within the test.
    { name: "on a queue broker, a job handed back is queued again: another worker resumes it at once, not after the delivery's visibility", available: true, store: async () => memoryStore(), queue: memoryQueue },
    // The store's lease clock is the database's (the default): a lease handed back is expired on it at once.
    { name: "on PostgreSQL on its own clock, another worker resumes a handed-back job at once", available: pgUrl !== undefined, store: async () => postgresStore({ url: (await freshPostgresUrl())! }), queue: undefined }
  ])("$name", async ({ available, queue, store }) => {
    if (!available) return
    const { provider, state } = heldProvider()
    const engine = await workerEngine(provider, { leaseMs: 600_000, pollIntervalMs: 50, drainTimeoutMs: 60_000 }, { queue, store: await store() })
    try {
      await engine.run(Effect.gen(function*() {
        yield* demoCaller(1_000_000_000, 1_000)
        const ids = yield* submitMany(20)
        const stopFirst = yield* startWorker(20)
        yield* until("every generation to start and be polled", () => state.starts === 20 && state.polls >= 20)
        const asked = Date.now()
        yield* stopFirst
        expect(Date.now() - asked).toBeLessThan(10_000)
        expect(yield* every(ids, handedBack)).toBe(true)
        state.release = true
        const stopSecond = yield* startWorker(20)
        yield* until("every job to complete", () => every(ids, (job) => job.status === "completed"), 10_000)
        expect(state.starts).toBe(20)
        yield* stopSecond
      }))
    } finally {
      await engine.dispose()
    }
  }, 60_000)
})
