import { describe, expect, it } from "@effect/vitest"
import { Clock, Context, Effect, Exit, Fiber, Layer, Metric, Option, Random, Ref, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { makeMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { StoreError } from "../../src/domain/errors.js"
import type { AccountId, JobId, RequestId } from "../../src/domain/ids.js"
import { providerStartsUnconfirmed } from "../../src/observability/metrics.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { BlobStore } from "../../src/ports/BlobStore.js"
import { JobEvents } from "../../src/ports/JobEvents.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import {
  type GenerationProvider,
  type ProviderError,
  type ProviderOutput,
  ProviderRejected,
  type ProviderRequest,
  type ProviderStatus,
  ProviderUnreachable,
  type StartOutcome
} from "../../src/ports/Provider.js"
import { Catalog } from "../../src/services/Catalog.js"
import type { EngineSettings } from "../../src/services/EngineConfig.js"
import { Jobs } from "../../src/services/Jobs.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { demoCaller, engineOver } from "../support/engineLayer.js"
import { textOutput } from "../support/providers.js"

const LEASE = 10_000
const config = { maxRetries: 5 }
const settings: Partial<EngineSettings> = {
  leaseMs: LEASE,
  maxAttempts: 3,
  providerPollIntervalMs: 1_000,
  providerRetry: { baseMs: 1_000, capMs: 8_000, maxRetries: config.maxRetries },
  storeRetry: { baseMs: 100, capMs: 1_000 }
}

/** A provider the test scripts call by call, counting them. */
const scriptedProvider = (script: {
  readonly start?: (n: number, request: ProviderRequest) => Effect.Effect<StartOutcome, ProviderError>
  readonly poll?: (n: number) => Effect.Effect<ProviderStatus, ProviderError>
  readonly recover?: GenerationProvider["recover"]
  readonly callsBack?: boolean
}) => {
  const counts = { starts: 0, polls: 0, cancels: 0, requests: [] as Array<ProviderRequest> }
  const provider: GenerationProvider = {
    start: (request) =>
      Effect.suspend(() => {
        counts.requests.push(request)
        const n = ++counts.starts
        return script.start?.(n, request) ?? Effect.succeed({ _tag: "Started", handle: { id: `gen_${n}` } } as const)
      }),
    poll: () =>
      Effect.suspend(() => {
        const n = ++counts.polls
        return script.poll?.(n) ?? Effect.succeed(succeeded([textOutput("done")]))
      }),
    cancel: () => Effect.sync(() => void counts.cancels++),
    ...(script.recover === undefined ? {} : { recover: script.recover }),
    ...(script.callsBack === true ? { verifyCallback: () => Effect.succeed({ handleId: "gen_1" }) } : {})
  }
  return { provider, counts }
}

const succeeded = (outputs: ReadonlyArray<ProviderOutput>) => ({ _tag: "Succeeded", outputs }) as const
const running: ProviderStatus = { _tag: "Running" }

/** Store faults a test switches on: writes by the named workers fail with a StoreError. */
interface Faults {
  completeFailures: number
  renewalsFailFor: Set<string>
  completeFailsFor: Set<string>
  /** How many leases each renewal write carried. */
  readonly renewals: Array<number>
}
const noFaults = (): Faults => ({ completeFailures: 0, renewalsFailFor: new Set(), completeFailsFor: new Set(), renewals: [] })
const outage = () => new StoreError({ message: "database unreachable" })

const faultyStores = (faults: Faults) =>
  Layer.effectContext(Effect.gen(function*() {
    const context = yield* Effect.context<Layer.Success<typeof layerMemoryStores>>()
    const repo = Context.get(context, JobRepo)
    return Context.add(context, JobRepo, {
      ...repo,
      complete: (id, workerId, outputs, now, route) =>
        faults.completeFailsFor.has(workerId) || (faults.completeFailures > 0 && faults.completeFailures-- > 0)
          ? Effect.fail(outage())
          : repo.complete(id, workerId, outputs, now, route),
      renewLeases: (leases, now, leaseMs) => {
        faults.renewals.push(leases.length)
        return leases.some((lease) => faults.renewalsFailFor.has(lease.workerId)) ? Effect.fail(outage()) : repo.renewLeases(leases, now, leaseMs)
      }
    })
  })).pipe(Layer.provide(layerMemoryStores))

/** Memory files that remember every key written and removed. */
const recordingFiles = () => {
  const store = makeMemoryBlobStore("http://files.test/files")
  const log = { written: [] as Array<string>, removed: [] as Array<string> }
  const blobs = BlobStore.of({
    ...store,
    putStream: (key, contentType, body) => Effect.tap(store.putStream(key, contentType, body), () => Effect.sync(() => log.written.push(key))),
    remove: (key) => Effect.tap(store.remove(key), () => Effect.sync(() => log.removed.push(key)))
  })
  const layer = Layer.merge(
    Layer.succeed(BlobStore, blobs),
    layerSignedUploadTarget({ publicUrl: "http://files.test", secret: "s" })
  )
  const exists = (key: string) => Effect.map(store.stat(key), Option.isSome)
  return { layer, log, exists }
}

const run = <A, E>(
  provider: GenerationProvider,
  body: Effect.Effect<A, E, Layer.Success<ReturnType<typeof engineOver>>>,
  options: { readonly faults?: Faults; readonly files?: ReturnType<typeof recordingFiles>; readonly settings?: Partial<EngineSettings> } = {}
) =>
  Effect.provide(
    body,
    engineOver(
      faultyStores(options.faults ?? noFaults()),
      provider,
      { ...settings, ...options.settings },
      (options.files ?? recordingFiles()).layer
    )
  )

const submitText = (input: Record<string, unknown> = { prompt: "p" }, catalog?: ReturnType<typeof demoCatalog>) =>
  Effect.gen(function*() {
    const caller = yield* demoCaller(100_000)
    if (catalog !== undefined) yield* (yield* Catalog).replace(catalog)
    const { job } = yield* (yield* Jobs).submit(caller, { model: "demo/text-gen/text-to-text", input }, "req_t" as RequestId)
    return { job, accountId: caller.account.id }
  })
const jobOf = (id: JobId) => JobRepo.use((repo) => repo.get(id)).pipe(Effect.map(Option.getOrThrow))
const balanceOf = (id: AccountId) =>
  AccountRepo.use((repo) => repo.get(id)).pipe(Effect.map((a) => Option.getOrThrow(a).balanceMicroCents))
const keyOf = (url: string) => url.slice("http://files.test/files/".length)

/** Moves the clock in steps (so sleeping fibers wake in turn) until `fiber` is done. */
const joinMoving = <A, E>(fiber: Fiber.Fiber<A, E>, stepMs = 500, maxMs = 120_000) =>
  Effect.gen(function*() {
    for (let moved = 0; moved < maxMs && fiber.pollUnsafe() === undefined; moved += stepMs) yield* TestClock.adjust(stepMs)
    if (fiber.pollUnsafe() === undefined) return yield* Effect.die(`still running after ${maxMs} ms`)
    return yield* Fiber.join(fiber)
  })

describe("provider runs: resume, never restart", () => {
  it.effect("a worker taking over after a lost lease polls the stored handle: one start", () => {
    const hanging = Effect.runSync(Ref.make(true))
    const { counts, provider } = scriptedProvider({
      poll: () => Effect.flatMap(Ref.get(hanging), (hangs) => (hangs ? Effect.never : Effect.succeed(succeeded([textOutput("done")]))))
    })
    return run(provider, Effect.gen(function*() {
      const worker = yield* Worker
      const { job } = yield* submitText()
      const dying = yield* Effect.forkChild(worker.runOnce("A"))
      yield* TestClock.adjust(1)
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "processing",
        providerPhase: "started",
        providerHandle: { id: "gen_1" },
        providerStarts: 1
      })
      yield* Fiber.interrupt(dying)
      yield* Ref.set(hanging, false)
      yield* TestClock.adjust(LEASE)
      expect(yield* worker.runOnce("B")).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", attempts: 2, providerStarts: 1 })
      expect([counts.starts, counts.polls]).toEqual([1, 2])
    }))
  })

  it.effect("a start whose answer was lost is recovered by the job's idempotency key, not started again", () => {
    const { counts, provider } = scriptedProvider({
      start: () => Effect.fail(new ProviderUnreachable({ message: "connection reset" })),
      recover: (request) => Effect.succeed({ _tag: "Found", handle: { id: `found_${request.idempotencyKey}` } } as const)
    })
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      expect(yield* (yield* Worker).runOnce("A")).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", providerHandle: { id: `found_${job.id}` }, providerStarts: 1 })
      expect([counts.starts, counts.polls]).toEqual([1, 1])
    }))
  })

  it.effect("a start that cannot be confirmed fails the job with a refund and is never asked again", () => {
    const { counts, provider } = scriptedProvider({ start: () => Effect.fail(new ProviderUnreachable({ message: "timeout" })) })
    return run(provider, Effect.gen(function*() {
      const unconfirmed = Metric.value(Metric.withAttributes(providerStartsUnconfirmed, { provider: "demo" }))
      const before = (yield* unconfirmed).count
      const { accountId, job } = yield* submitText()
      expect(yield* (yield* Worker).runOnce("A")).toBe(true)
      // The start may have run there: its route is recorded.
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "failed",
        // No answer (not a timeout of ours): the provider's trouble, a later submit likely fine (issue 38).
        error: { code: "INTERNAL_ERROR", message: expect.stringContaining("provider start could not be confirmed"), type: "provider_unavailable", retryable: true },
        providerRoute: { index: 0, providerId: "demo" }
      })
      expect(yield* balanceOf(accountId)).toBe(100_000)
      expect(counts.starts).toBe(1)
      // Operators see the paid generation that may have no job: genjobs_provider_starts_unconfirmed_total{provider}.
      expect((yield* unconfirmed).count - before).toBe(1)
    }))
  })

  it.effect("a worker that finds a start committed without its handle (it crashed in between) fails the job instead of starting", () => {
    const { counts, provider } = scriptedProvider({})
    return run(provider, Effect.gen(function*() {
      const repo = yield* JobRepo
      const { accountId, job } = yield* submitText()
      // What a worker dying between the "starting" commit and the provider's answer leaves.
      yield* repo.claim({ workerId: "dead", now: 0, leaseMs: LEASE, maxAttempts: 3 })
      yield* repo.saveProviderState(job.id, "dead", { phase: "starting", handle: null, starts: 1 })
      yield* TestClock.adjust(LEASE)
      expect(yield* (yield* Worker).runOnce("B")).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "failed", error: { code: "INTERNAL_ERROR" } })
      expect(yield* balanceOf(accountId)).toBe(100_000)
      expect(counts.starts).toBe(0)
    }))
  })

  it.effect("a worker that dies after its first claim, before calling the provider: the claim's mark keeps the next worker from starting", () => {
    const { counts, provider } = scriptedProvider({})
    return run(provider, Effect.gen(function*() {
      const repo = yield* JobRepo
      const { accountId, job } = yield* submitText()
      const claimed = Option.getOrThrow(yield* repo.claim({ workerId: "dead", now: 0, leaseMs: LEASE, maxAttempts: 3 }))
      expect(claimed).toMatchObject({ providerPhase: "starting", providerStarts: 1, attempts: 1 })
      yield* TestClock.adjust(LEASE)
      expect(yield* (yield* Worker).runOnce("B")).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "failed", error: { code: "INTERNAL_ERROR" }, providerStarts: 1 })
      expect(yield* balanceOf(accountId)).toBe(100_000)
      expect(counts.starts).toBe(0)
    }))
  })

  /** What a worker dying after its `starting` commit and before the provider's answer leaves, taken over by "B". */
  const takenOver = () =>
    Effect.gen(function*() {
      const repo = yield* JobRepo
      const { accountId, job } = yield* submitText()
      yield* repo.claim({ workerId: "dead", now: 0, leaseMs: LEASE, maxAttempts: 3 })
      yield* repo.saveProviderState(job.id, "dead", { phase: "starting", handle: null, starts: 1 })
      yield* TestClock.adjust(LEASE)
      const fiber = yield* Effect.forkChild((yield* Worker).runOnce("B"))
      return { accountId, job, fiber }
    })

  it.effect("a lost start the provider's complete record does not hold: searched again once it would show, then started once and completed", () => {
    const SETTLE = 30_000
    const searchedAt: Array<number> = []
    const { counts, provider } = scriptedProvider({
      recover: () => Effect.map(Clock.currentTimeMillis, (now) => (searchedAt.push(now), { _tag: "NotStarted", settledAfterMs: SETTLE } as const))
    })
    return run(provider, Effect.gen(function*() {
      const { accountId, fiber, job } = yield* takenOver()
      expect(yield* joinMoving(fiber)).toBe(true)
      expect(searchedAt).toHaveLength(2)
      expect(searchedAt[1]! - searchedAt[0]!).toBeGreaterThanOrEqual(SETTLE)
      expect(counts.starts).toBe(1)
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "completed",
        error: null,
        providerPhase: "started",
        providerHandle: { id: "gen_1" },
        providerStarts: 2
      })
      expect(yield* balanceOf(accountId)).toBe(100_000 - job.costMicroCents)
    }))
  })

  it.effect("a lost start that shows at the provider only on the second search is followed, not started again", () => {
    let searches = 0
    const { counts, provider } = scriptedProvider({
      recover: () =>
        Effect.sync(() =>
          ++searches === 1
            ? { _tag: "NotStarted", settledAfterMs: 10_000 } as const
            : { _tag: "Found", handle: { id: "late_prediction" } } as const
        )
    })
    return run(provider, Effect.gen(function*() {
      const { fiber, job } = yield* takenOver()
      expect(yield* joinMoving(fiber)).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", providerHandle: { id: "late_prediction" }, providerStarts: 1 })
      expect([counts.starts, counts.polls]).toEqual([0, 1])
    }))
  })

  it.effect("a lost start the provider finds is followed on its handle: no start", () => {
    const { counts, provider } = scriptedProvider({
      recover: (request) => Effect.succeed({ _tag: "Found", handle: { id: `found_${request.idempotencyKey}` } } as const)
    })
    return run(provider, Effect.gen(function*() {
      const { fiber, job } = yield* takenOver()
      expect(yield* joinMoving(fiber)).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", providerHandle: { id: `found_${job.id}` }, providerStarts: 1 })
      expect([counts.starts, counts.polls]).toEqual([0, 1])
    }))
  })

  it.effect("a lost start the provider cannot rule out (Unknown, or NotStarted then Unknown) fails the job with a refund, no start", () =>
    Effect.forEach([["Unknown"], ["NotStarted", "Unknown"]] as const, (answers) => {
      let searches = 0
      const { counts, provider } = scriptedProvider({
        recover: () =>
          Effect.sync(() =>
            answers[Math.min(searches++, answers.length - 1)] === "Unknown"
              ? { _tag: "Unknown" } as const
              : { _tag: "NotStarted", settledAfterMs: 5_000 } as const
          )
      })
      return run(provider, Effect.gen(function*() {
        const { accountId, fiber, job } = yield* takenOver()
        expect(yield* joinMoving(fiber)).toBe(true)
        expect(yield* jobOf(job.id)).toMatchObject({
          status: "failed",
          error: { code: "INTERNAL_ERROR", message: expect.stringContaining("could not be confirmed") }
        })
        expect(yield* balanceOf(accountId)).toBe(100_000)
        expect([searches, counts.starts]).toEqual([answers.length, 0])
      }))
    }))

  it.effect("a start whose answer was lost in this run is never asked again, even when the provider says NotStarted", () => {
    const { counts, provider } = scriptedProvider({
      start: () => Effect.fail(new ProviderUnreachable({ message: "timeout" })),
      recover: () => Effect.succeed({ _tag: "NotStarted", settledAfterMs: 0 } as const)
    })
    return run(provider, Effect.gen(function*() {
      const { accountId, job } = yield* submitText()
      expect(yield* (yield* Worker).runOnce("A")).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "failed", error: { code: "INTERNAL_ERROR" } })
      expect(yield* balanceOf(accountId)).toBe(100_000)
      expect(counts.starts).toBe(1)
    }))
  })

  it.effect("a provider that finishes in its start needs no handle; the job records the route with its end", () => {
    const { counts, provider } = scriptedProvider({
      start: () => Effect.succeed({ _tag: "Finished", status: succeeded([textOutput("at once")]) } as const)
    })
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      yield* (yield* Worker).runOnce("A")
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "completed",
        providerPhase: "starting",
        providerHandle: null,
        providerRoute: { index: 0, providerId: "demo" }
      })
      expect([counts.starts, counts.polls]).toEqual([1, 0])
    }))
  })
})

/** The demo text model with a deadline of `timeoutSeconds` at its provider. */
const withDeadline = (timeoutSeconds: number) => {
  const catalog = demoCatalog()
  const text = catalog.models.find((m) => m["slug"] === "demo/text-gen/text-to-text")!
  text["versions"][0].provider = { timeoutSeconds }
  return catalog
}

const refused = () => new ProviderUnreachable({ message: "could not be reached: fetch failed (ECONNREFUSED)", notSent: true })

describe("provider runs: provider outages", () => {
  it.effect("a provider refusing connections: the job waits with backoff, no start recorded, and completes once it is back; one start", () => {
    const down = Effect.runSync(Ref.make(true))
    const askedAt: Array<number> = []
    // The stored phase at each call: every start, retries included, is marked `starting` first.
    const phasesAtStart: Array<string | null> = []
    let storedPhase: Effect.Effect<string | null> = Effect.succeed(null)
    const { counts, provider } = scriptedProvider({
      start: (n) =>
        Effect.gen(function*() {
          askedAt.push(yield* Clock.currentTimeMillis)
          phasesAtStart.push(yield* storedPhase)
          return (yield* Ref.get(down)) ? yield* Effect.fail(refused()) : { _tag: "Started", handle: { id: `gen_${n}` } } as const
        })
    })
    return run(provider, Effect.gen(function*() {
      const { accountId, job } = yield* submitText()
      const repo = yield* JobRepo
      storedPhase = repo.get(job.id).pipe(Effect.map((found) => Option.getOrThrow(found).providerPhase), Effect.orDie)
      const fiber = yield* Effect.forkChild((yield* Worker).runOnce("A"))
      // Far past providerRetry.maxRetries (5 here): an outage is waited out, not counted.
      for (let moved = 0; counts.starts < 12 && moved < 600_000; moved += 500) yield* TestClock.adjust(500)
      expect(counts.starts).toBeGreaterThanOrEqual(12)
      expect(phasesAtStart.every((phase) => phase === "starting")).toBe(true)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "processing", providerPhase: null, providerHandle: null, attempts: 1 })
      // Capped exponential backoff: waits grow, none past capMs (8 s here).
      const waits = askedAt.slice(1).map((at, i) => at - askedAt[i]!)
      expect(Math.max(...waits)).toBeLessThanOrEqual(8_000)
      expect(askedAt.at(-1)! - askedAt[0]!).toBeGreaterThan(20_000)
      yield* Ref.set(down, false)
      expect(yield* joinMoving(fiber)).toBe(true)
      const done = yield* jobOf(job.id)
      expect(done).toMatchObject({ status: "completed", error: null, providerPhase: "started", providerHandle: { id: `gen_${counts.starts}` } })
      expect(done.providerStarts).toBe(counts.starts)
      expect(yield* balanceOf(accountId)).toBe(100_000 - job.costMicroCents)
      // Seeded: the backoff's full jitter draws each wait below its ceiling, so 11 waits may sum
      // under 20 s by chance (about 1 run in 150 unseeded; one CI run drew 17,988 ms).
    }).pipe(Random.withSeed("provider-outage")))
  })

  it.effect("an outage that outlasts the version's deadline fails the job with PROVIDER_UNAVAILABLE and a refund", () => {
    const { counts, provider } = scriptedProvider({ start: () => Effect.fail(refused()) })
    return run(provider, Effect.gen(function*() {
      const { accountId, job } = yield* submitText({ prompt: "p" }, withDeadline(120))
      const fiber = yield* Effect.forkChild((yield* Worker).runOnce("A"))
      yield* TestClock.adjust(119_000)
      expect(fiber.pollUnsafe() === undefined).toBe(true)
      yield* joinMoving(fiber)
      const failed = yield* jobOf(job.id)
      // No start ever left: no route ran the job.
      expect(failed).toMatchObject({
        status: "failed",
        providerHandle: null,
        providerRoute: null,
        error: { code: "PROVIDER_UNAVAILABLE", message: expect.stringContaining("within 120 seconds (could not be reached"), type: "provider_unavailable", retryable: true }
      })
      expect(failed.completedAt! - failed.startedAt!).toBeGreaterThanOrEqual(120_000)
      expect(yield* balanceOf(accountId)).toBe(100_000)
      expect(counts.starts).toBeGreaterThan(config.maxRetries + 1)
    }))
  })

  it.effect("without a deadline in the catalog an outage is waited out for an hour", () => {
    const { provider } = scriptedProvider({ start: () => Effect.fail(refused()) })
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      const fiber = yield* Effect.forkChild((yield* Worker).runOnce("A"))
      yield* TestClock.adjust(3_590_000)
      expect((yield* jobOf(job.id)).status).toBe("processing")
      yield* joinMoving(fiber, 5_000)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "failed", error: { code: "PROVIDER_UNAVAILABLE" } })
      // A long lease keeps the test's hour of renewals short.
    }), { settings: { leaseMs: 600_000 } })
  })

  it.effect("429 and 503 from a start are waited out like an outage, Retry-After honoured; other 5xx still give up after maxRetries", () => {
    const busy = scriptedProvider({
      start: (n) =>
        n <= 8
          ? Effect.fail(new ProviderRejected({ message: "overloaded", retryable: true, httpStatus: n % 2 === 0 ? 429 : 503, retryAfterMs: 2_000 }))
          : Effect.succeed({ _tag: "Started", handle: { id: `gen_${n}` } } as const)
    })
    const broken = scriptedProvider({
      start: () => Effect.fail(new ProviderRejected({ message: "internal error", retryable: true, httpStatus: 500 }))
    })
    return Effect.gen(function*() {
      yield* run(busy.provider, Effect.gen(function*() {
        const { job } = yield* submitText()
        yield* joinMoving(yield* Effect.forkChild((yield* Worker).runOnce("A")))
        expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", providerHandle: { id: "gen_9" }, providerStarts: 9 })
      }))
      yield* run(broken.provider, Effect.gen(function*() {
        const { job } = yield* submitText()
        yield* joinMoving(yield* Effect.forkChild((yield* Worker).runOnce("A")))
        expect(yield* jobOf(job.id)).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED", message: "internal error" } })
        expect(broken.counts.starts).toBe(config.maxRetries + 1)
      }))
    })
  })

  it.effect("a start whose request may have arrived (no answer after it was sent) is never asked again, outage or not", () => {
    const { counts, provider } = scriptedProvider({
      start: (n) => Effect.fail(n === 1 ? refused() : new ProviderUnreachable({ message: "connection reset after the request was sent" }))
    })
    return run(provider, Effect.gen(function*() {
      const { accountId, job } = yield* submitText()
      yield* joinMoving(yield* Effect.forkChild((yield* Worker).runOnce("A")))
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "failed",
        providerPhase: "starting",
        error: { code: "INTERNAL_ERROR", message: expect.stringContaining("provider start could not be confirmed") }
      })
      expect(counts.starts).toBe(2)
      expect(yield* balanceOf(accountId)).toBe(100_000)
    }))
  })

  it.effect("a worker that dies while waiting out an outage leaves no start recorded: the next one starts the job", () => {
    const down = Effect.runSync(Ref.make(true))
    const { counts, provider } = scriptedProvider({
      start: (n) => Effect.flatMap(Ref.get(down), (isDown) => (isDown ? Effect.fail(refused()) : Effect.succeed({ _tag: "Started", handle: { id: `gen_${n}` } } as const)))
    })
    return run(provider, Effect.gen(function*() {
      const worker = yield* Worker
      const { job } = yield* submitText()
      const dying = yield* Effect.forkChild(worker.runOnce("A"))
      for (let moved = 0; counts.starts < 3 && moved < 60_000; moved += 500) yield* TestClock.adjust(500)
      yield* Fiber.interrupt(dying)
      yield* Ref.set(down, false)
      yield* TestClock.adjust(LEASE)
      expect(yield* joinMoving(yield* Effect.forkChild(worker.runOnce("B")))).toBe(true)
      // Only the last start was taken: the handle is its own.
      expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", attempts: 2, providerHandle: { id: `gen_${counts.starts}` } })
      expect(counts.starts).toBeGreaterThan(3)
    }))
  })
})

describe("provider runs: provider errors", () => {
  it.effect("429 three times, then the start is taken: the job completes, no failure recorded, Retry-After honoured", () => {
    const startedAt: Array<number> = []
    const { counts, provider } = scriptedProvider({
      start: (n) =>
        Effect.flatMap(Effect.clockWith((clock) => clock.currentTimeMillis), (now) => {
          startedAt.push(now)
          return n <= 3
            ? Effect.fail(new ProviderRejected({ message: "rate limited", retryable: true, retryAfterMs: 3_000, httpStatus: 429 }))
            : Effect.succeed({ _tag: "Started", handle: { id: `gen_${n}` } } as const)
        })
    })
    return run(provider, Effect.gen(function*() {
      const { accountId, job } = yield* submitText()
      expect(yield* joinMoving(yield* Effect.forkChild((yield* Worker).runOnce("A")))).toBe(true)
      const done = yield* jobOf(job.id)
      expect(done).toMatchObject({ status: "completed", error: null, providerStarts: 4, providerHandle: { id: "gen_4" } })
      expect(yield* balanceOf(accountId)).toBe(100_000 - job.costMicroCents)
      expect(counts.starts).toBe(4)
      for (let i = 1; i < startedAt.length; i++) expect(startedAt[i]! - startedAt[i - 1]!).toBeGreaterThanOrEqual(3_000)
    }))
  })

  it.effect("a permanent provider error fails the job with GENERATION_FAILED and the provider's message, refunded", () => {
    const { counts, provider } = scriptedProvider({
      poll: () => Effect.fail(new ProviderRejected({ message: "prompt refused by the safety filter", retryable: false, httpStatus: 422 }))
    })
    return run(provider, Effect.gen(function*() {
      const { accountId, job } = yield* submitText()
      yield* (yield* Worker).runOnce("A")
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "failed",
        error: { code: "GENERATION_FAILED", message: "prompt refused by the safety filter", type: "input_rejected", retryable: false }
      })
      expect(yield* balanceOf(accountId)).toBe(100_000)
      expect(counts.polls).toBe(1)
    }))
  })

  it.effect("polls through transient errors; gives up after maxRetries in a row", () => {
    const { counts, provider } = scriptedProvider({ poll: () => Effect.fail(new ProviderUnreachable({ message: "503 upstream" })) })
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      yield* joinMoving(yield* Effect.forkChild((yield* Worker).runOnce("A")))
      expect(yield* jobOf(job.id)).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED", message: "503 upstream" } })
      expect(counts.polls).toBe(6)
    }))
  })

  it.effect("a deadline (provider.timeoutSeconds) cancels at the provider and fails the job with a refund", () => {
    const { counts, provider } = scriptedProvider({ poll: () => Effect.succeed(running) })
    return run(provider, Effect.gen(function*() {
      const catalog = demoCatalog()
      const text = catalog.models.find((m) => m["slug"] === "demo/text-gen/text-to-text")!
      text["versions"][0].provider = { model: "acme/echo-2", input: { text: "$.prompt", style: "plain", seed: "$.seed" }, timeoutSeconds: 30 }
      const { accountId, job } = yield* submitText({ prompt: "hello" }, catalog)
      const fiber = yield* Effect.forkChild((yield* Worker).runOnce("A"))
      yield* TestClock.adjust(29_000)
      expect(fiber.pollUnsafe() === undefined).toBe(true)
      yield* joinMoving(fiber)
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "failed",
        error: { code: "GENERATION_FAILED", message: expect.stringContaining("did not finish within 30 seconds"), type: "provider_timeout", retryable: true }
      })
      expect(yield* balanceOf(accountId)).toBe(100_000)
      expect(counts.cancels).toBe(1)
      expect(counts.requests[0]).toMatchObject({ providerModel: "acme/echo-2", input: { text: "hello", style: "plain" }, idempotencyKey: job.id })
      expect(counts.requests[0]!.input).not.toHaveProperty("seed")
    }))
  })

  it.effect("a job hint (a verified callback) makes a waiting job poll at once; callers get the callback address", () => {
    const { counts, provider } = scriptedProvider({
      callsBack: true,
      poll: (n) => Effect.succeed(n === 1 ? { _tag: "Running", pollAfterMs: 600_000 } : succeeded([textOutput("called back")]))
    })
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      const fiber = yield* Effect.forkChild((yield* Worker).runOnce("A"))
      yield* TestClock.adjust(1)
      expect(counts.polls).toBe(1)
      yield* (yield* JobEvents).publish([job.id])
      yield* TestClock.adjust(1)
      expect(yield* Fiber.join(fiber)).toBe(true)
      expect(counts.polls).toBe(2)
      expect(counts.requests[0]!.callbackUrl).toBe(`https://api.genjobs.test/genjobs/v1/providers/demo/callbacks/${job.id}`)
    }), { settings: { publicUrl: "https://api.genjobs.test/genjobs/" } })
  })
})

describe("provider runs: store errors and leases", () => {
  it.effect("a completion that hits a transient store error is retried, not left to wait out the lease", () => {
    const faults = { ...noFaults(), completeFailures: 2 }
    const { counts, provider } = scriptedProvider({})
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      yield* joinMoving(yield* Effect.forkChild((yield* Worker).runOnce("A")), 100)
      expect(yield* jobOf(job.id)).toMatchObject({ status: "completed", attempts: 1 })
      expect(faults.completeFailures).toBe(0)
      expect(counts.starts).toBe(1)
    }), { faults })
  })

  it.effect("renewal errors do not count as held: the lease is lost once its last known end passes", () => {
    const faults = noFaults()
    faults.renewalsFailFor.add("A")
    const { provider } = scriptedProvider({ poll: () => Effect.never })
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      const fiber = yield* Effect.forkChild((yield* Worker).runOnce("A"))
      yield* TestClock.adjust(LEASE - 1)
      expect(fiber.pollUnsafe() === undefined).toBe(true)
      yield* TestClock.adjust(LEASE)
      expect(fiber.pollUnsafe() !== undefined).toBe(true)
      expect((yield* jobOf(job.id)).status).toBe("processing")
    }), { faults })
  })

  it.effect("renews every lease a process holds in one store write per tick", () => {
    const faults = noFaults()
    const { provider } = scriptedProvider({ poll: () => Effect.never })
    return run(provider, Effect.gen(function*() {
      const caller = yield* demoCaller(1_000_000, 50)
      for (let i = 0; i < 20; i++) yield* (yield* Jobs).submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: `${i}` } }, "req" as RequestId)
      const scope = yield* Scope.make()
      yield* (yield* Worker).start(20).pipe(Scope.provide(scope))
      yield* TestClock.adjust(1)
      faults.renewals.length = 0
      yield* TestClock.adjust(LEASE)
      expect(faults.renewals).toEqual([20, 20, 20])
      yield* joinMoving(yield* Effect.forkChild(Scope.close(scope, Exit.void)), 1, 100)
    }), { faults, settings: { drainTimeoutMs: 1 } })
  })
})

describe("provider runs: outputs", () => {
  it.effect("stores outputs under keys unique to the attempt, starting with the job's id", () => {
    const files = recordingFiles()
    const { provider } = scriptedProvider({})
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      yield* (yield* Worker).runOnce("A")
      const [output] = (yield* jobOf(job.id)).outputs!
      expect(keyOf(output!.url)).toMatch(new RegExp(`^${job.id}-[0-9a-f]{8}-0\\.txt$`))
      expect(files.log.written).toEqual([keyOf(output!.url)])
    }), { files })
  })

  it.effect("a superseded worker removes its own files and never touches the winner's", () => {
    const files = recordingFiles()
    const faults = noFaults()
    const { counts, provider } = scriptedProvider({})
    return run(provider, Effect.gen(function*() {
      const worker = yield* Worker
      const { job } = yield* submitText()
      // A stores its outputs, then can no longer reach the store: its completion and renewals fail.
      faults.completeFailsFor.add("A")
      faults.renewalsFailFor.add("A")
      const a = yield* Effect.forkChild(worker.runOnce("A"))
      yield* TestClock.adjust(1)
      const [aFile] = files.log.written
      expect(aFile).toBeDefined()
      yield* TestClock.adjust(LEASE)
      expect(yield* worker.runOnce("B")).toBe(true)
      yield* joinMoving(a, 100)
      const done = yield* jobOf(job.id)
      expect(done).toMatchObject({ status: "completed", attempts: 2 })
      const bFile = keyOf(done.outputs![0]!.url)
      expect(bFile).not.toBe(aFile)
      expect(files.log.removed).toEqual([aFile])
      expect(yield* files.exists(bFile)).toBe(true)
      expect(yield* files.exists(aFile!)).toBe(false)
      expect(counts.starts).toBe(1)
    }), { faults, files })
  })

  const bytes = (...chunks: ReadonlyArray<Uint8Array>): ProviderOutput["source"] => ({
    _tag: "Bytes",
    body: Stream.fromIterable(chunks),
    contentType: "image/png"
  })

  it.effect("refuses an output over its type's size cap while it streams: the job fails refunded, nothing stays stored", () => {
    const files = recordingFiles()
    const { provider } = scriptedProvider({
      poll: () =>
        Effect.succeed(succeeded([
          textOutput("fine"),
          { type: "image", source: bytes(new Uint8Array(6), new Uint8Array(6)) }
        ]))
    })
    return run(provider, Effect.gen(function*() {
      const { accountId, job } = yield* submitText()
      yield* (yield* Worker).runOnce("A")
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "failed",
        error: { code: "GENERATION_FAILED", message: "A image output is larger than the 10 bytes allowed", type: "output_invalid", retryable: false }
      })
      expect(yield* balanceOf(accountId)).toBe(100_000)
      for (const key of files.log.written) expect(yield* files.exists(key)).toBe(false)
      expect(files.log.written).toHaveLength(1)
    }), { files, settings: { outputSizeCaps: { image: 10, video: 10, audio: 10, text: 10 } } })
  })

  it.effect("refuses an output whose content type does not fit its type", () => {
    const { provider } = scriptedProvider({
      poll: () =>
        Effect.succeed(succeeded([{
          type: "image",
          source: { _tag: "Bytes", body: Stream.make(new Uint8Array(3)), contentType: "text/html" }
        }]))
    })
    return run(provider, Effect.gen(function*() {
      const { job } = yield* submitText()
      yield* (yield* Worker).runOnce("A")
      expect(yield* jobOf(job.id)).toMatchObject({
        status: "failed",
        error: { code: "GENERATION_FAILED", message: "A image output came as text/html", type: "output_invalid", retryable: false }
      })
    }))
  })
})

describe("provider runs: outputs given as URLs", () => {
  const MiB = 1024 * 1024
  /** Serves `/small.png` (a PNG, no length), `/big.mp4` (3 MiB announced), `/page` (HTML) and 404 elsewhere. */
  const serve = Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ server: Server; base: string; served: Array<string> }>((resolve) => {
        const served: Array<string> = []
        const server = createServer((req, res) => {
          served.push(req.url ?? "")
          if (req.url === "/small.png") {
            res.writeHead(200, { "content-type": "image/png" })
            res.write(Buffer.from([1, 2, 3]))
            return res.end(Buffer.from([4, 5]))
          }
          if (req.url === "/big.mp4") {
            res.writeHead(200, { "content-type": "video/mp4", "content-length": String(3 * MiB) })
            return res.end(Buffer.alloc(3 * MiB))
          }
          if (req.url === "/page") {
            res.writeHead(200, { "content-type": "text/html" })
            return res.end("<html></html>")
          }
          res.writeHead(404).end()
        })
        server.listen(0, "127.0.0.1", () =>
          resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, served }))
      })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((done) => server.close(() => done())))
  )

  const urlOutput = (type: ProviderOutput["type"], url: string): ProviderOutput => ({ type, source: { _tag: "Url", url } })

  it.live("fetches URL outputs as they stream, checking type and size; a refused one fails the job refunded", () =>
    Effect.scoped(Effect.gen(function*() {
      const { base, served } = yield* serve
      const outcome = (outputs: ReadonlyArray<ProviderOutput>) => {
        const { provider } = scriptedProvider({ poll: () => Effect.succeed(succeeded(outputs)) })
        return run(provider, Effect.gen(function*() {
          const { accountId, job } = yield* submitText()
          yield* (yield* Worker).runOnce("A")
          const ended = yield* jobOf(job.id)
          const stored = ended.outputs === null ? null : yield* BlobStore.use((blobs) => blobs.get(keyOf(ended.outputs![0]!.url)))
          const bytes = stored === null || Option.isNone(stored)
            ? null
            : [...Buffer.concat([...(yield* Stream.runCollect(stored.value.body))])]
          return { job: ended, refunded: (yield* balanceOf(accountId)) === 100_000, bytes }
        }), { settings: { outputSizeCaps: { image: MiB, video: 2 * MiB, audio: MiB, text: MiB }, providerOutputAllowPrivate: true } })
      }

      const small = yield* outcome([urlOutput("image", `${base}/small.png`)])
      expect(small.job).toMatchObject({ status: "completed", outputs: [{ type: "image", contentType: "image/png" }] })
      expect(small.bytes).toEqual([1, 2, 3, 4, 5])

      const big = yield* outcome([urlOutput("video", `${base}/big.mp4`)])
      expect(big.job).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED", message: "A video output is larger than the 2 MiB allowed" } })
      expect(big.refunded).toBe(true)

      const page = yield* outcome([urlOutput("image", `${base}/page`)])
      expect(page.job).toMatchObject({ status: "failed", error: { message: "A image output came as text/html" } })

      const missing = yield* outcome([urlOutput("image", `${base}/gone.png`)])
      expect(missing.job).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED", message: `The output ${base}/gone.png answered 404` } })
      expect(served).toEqual(["/small.png", "/big.mp4", "/page", "/gone.png"])
    })))
})
