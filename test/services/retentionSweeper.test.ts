import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber, Layer, Logger, Option, References, Result, Scope } from "effect"
import { TestClock } from "effect/testing"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { makeMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import type { JobId, RequestId } from "../../src/domain/ids.js"
import { AccountRepo } from "../../src/ports/AccountRepo.js"
import { BlobStore } from "../../src/ports/BlobStore.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { imageOutput } from "../../adapters/testing/outputs.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import type { EngineSettings } from "../../src/services/EngineConfig.js"
import { Jobs } from "../../src/services/Jobs.js"
import { make as makeSweeper, RetentionSweeper } from "../../src/services/RetentionSweeper.js"
import { UploadSigningSecret } from "../../src/services/Uploads.js"
import { Worker } from "../../src/services/Worker.js"
import { demoCaller, engineOver } from "../support/engineLayer.js"

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

/** Writes a PNG for each job, or fails the job when its prompt says "fail". */
const generator: GenerationProvider = {
  start: ({ job }) =>
    Effect.succeed({
      _tag: "Finished",
      status: (job.input as { prompt?: string }).prompt === "fail"
        ? { _tag: "Failed", message: "asked to fail" }
        : { _tag: "Succeeded", outputs: [imageOutput()] }
    }),
  poll: () => Effect.never,
  cancel: () => Effect.void
}

/** Files in memory; `gate`, when given, holds every removeByPrefix until it opens and says when one began. */
const filesWith = (gate?: { readonly entered: Deferred.Deferred<void>; readonly open: Deferred.Deferred<void> }) =>
  Layer.mergeAll(
    Layer.sync(BlobStore, () => {
      const blobs = makeMemoryBlobStore("http://files.test")
      return gate === undefined ? blobs : {
        ...blobs,
        removeByPrefix: (prefixes) =>
          Deferred.succeed(gate.entered, undefined).pipe(
            Effect.andThen(Deferred.await(gate.open)),
            Effect.andThen(blobs.removeByPrefix(prefixes))
          )
      }
    }),
    layerSignedUploadTarget({ publicUrl: "http://files.test", secret: "s" }),
    Layer.succeed(UploadSigningSecret, "s")
  )

const engine = (settings: Partial<EngineSettings>, files = filesWith()) => engineOver(layerMemoryStores, generator, settings, files)

type Caller = Effect.Success<ReturnType<typeof demoCaller>>

const submit = (caller: Caller, input: { prompt: string }, options: { webhookUrl?: string; key?: string } = {}) =>
  Jobs.use((jobs) =>
    jobs.submit(
      caller,
      { model: "demo/image-gen/text-to-image", input, ...(options.webhookUrl === undefined ? {} : { webhookUrl: options.webhookUrl }) },
      "req_r" as RequestId,
      options.key
    )).pipe(Effect.map((result) => result.job.id))

/** Runs the oldest runnable job to its end. */
const runNext = Worker.use((worker) => worker.runOnce("w")).pipe(Effect.tap((ran) => Effect.sync(() => expect(ran).toBe(true))))

/** Ends the job's pending delivery as `status`, as a dispatcher would after an attempt. */
const deliver = (jobId: JobId, status: "sent" | "failed") =>
  Effect.gen(function*() {
    const deliveries = yield* WebhookDeliveryRepo
    const now = yield* Clock.currentTimeMillis
    const [delivery] = yield* deliveries.forJob(jobId)
    const [claimed] = yield* deliveries.claimDue({ workerId: "d", now, leaseMs: 1_000, maxPerAccount: 100, limit: 1 })
    expect(claimed?.id).toBe(delivery!.id)
    const attempt = { attempt: 1, at: now, statusCode: status === "sent" ? 200 : 500, error: null, durationMs: 1, responseBody: null }
    yield* deliveries.recordAttempt(claimed!.id, "d", attempt, { status })
  })

const exists = (jobId: JobId) => JobRepo.use((repo) => repo.get(jobId)).pipe(Effect.map(Option.isSome))
/** The key of the job's first output file, read from its URL (keys are unique to the attempt that wrote them). */
const outputKey = (jobId: JobId) =>
  JobRepo.use((repo) => repo.get(jobId)).pipe(
    Effect.map((job) => Option.getOrThrow(job).outputs![0]!.url.split("/").pop()!)
  )
const stored = (key: string) => BlobStore.use((blobs) => blobs.stat(key)).pipe(Effect.map(Option.isSome))
const sweep = RetentionSweeper.use((sweeper) => sweeper.sweepOnce).pipe(Effect.map(Option.getOrThrow))

describe("RetentionSweeper", () => {
  it.effect("removes ended jobs past retention with their files and finished deliveries, and keeps the rest and the ledger", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller(10_000_000, 100)
      const hook = { webhookUrl: "https://hooks.genjobs.test/done" }
      const completed = yield* submit(caller, { prompt: "a" }, hook)
      yield* runNext
      yield* deliver(completed, "sent")
      const failed = yield* submit(caller, { prompt: "fail" }, hook)
      yield* runNext
      yield* deliver(failed, "failed")
      const cancelled = yield* submit(caller, { prompt: "c" })
      yield* (yield* Jobs).cancel(caller, cancelled)
      const unsent = yield* submit(caller, { prompt: "u" }, hook)
      yield* runNext
      const completedFile = yield* outputKey(completed)
      const unsentFile = yield* outputKey(unsent)
      const blobs = yield* BlobStore
      // What an attempt that lost its lease left behind, and an upload: only the first is the job's.
      yield* blobs.put(`${completed}-a1-0.png`, { bytes: new Uint8Array([9]), contentType: "image/png" })
      yield* blobs.put("upl_kept", { bytes: new Uint8Array([9]), contentType: "image/png" })

      yield* TestClock.adjust(29 * DAY)
      const recent = yield* submit(caller, { prompt: "r" })
      yield* runNext
      const recentFile = yield* outputKey(recent)
      const running = yield* submit(caller, { prompt: "p" })
      yield* JobRepo.use((repo) => repo.claim({ workerId: "gone", now: 29 * DAY, leaseMs: 1_000, maxAttempts: 3 }))
      const pending = yield* submit(caller, { prompt: "q" })
      const ledgerBefore = yield* AccountRepo.use((repo) => repo.ledger(caller.account.id))

      yield* TestClock.adjust(DAY)
      // The changes feed keeps its 7 days whatever the jobs' retention: the 4 endings near day 0 go.
      expect(yield* sweep).toEqual({ jobs: 0, deliveries: 0, files: 0, idempotencyKeys: 0, changes: 4 })
      yield* TestClock.adjust(1)
      const logs: Array<{ message: unknown; annotations: Record<string, unknown> }> = []
      const recording = Logger.layer([
        Logger.make(({ fiber, message }) => logs.push({ message, annotations: { ...fiber.getRef(References.CurrentLogAnnotations) } }))
      ])
      expect(yield* sweep.pipe(Effect.provide(recording))).toEqual({ jobs: 3, deliveries: 2, files: 2, idempotencyKeys: 0, changes: 0 })
      expect(logs).toEqual([{
        message: ["retention sweep removed what was past retention"],
        annotations: { jobs: 3, deliveries: 2, files: 2, idempotencyKeys: 0, changes: 0 }
      }])

      for (const gone of [completed, failed, cancelled]) expect(yield* exists(gone)).toBe(false)
      for (const kept of [unsent, recent, running, pending]) expect(yield* exists(kept)).toBe(true)
      expect(completedFile.startsWith(`${completed}-`)).toBe(true)
      expect(yield* stored(completedFile)).toBe(false)
      expect(yield* stored(`${completed}-a1-0.png`)).toBe(false)
      expect(yield* stored(unsentFile)).toBe(true)
      expect(yield* stored(recentFile)).toBe(true)
      expect(yield* stored("upl_kept")).toBe(true)
      const deliveries = yield* WebhookDeliveryRepo
      expect(yield* deliveries.forJob(completed)).toEqual([])
      expect((yield* deliveries.forJob(unsent)).map((d) => d.status)).toEqual(["pending"])
      expect(Result.isFailure(yield* Effect.result((yield* Jobs).get(caller, completed)))).toBe(true)

      // The ledger keeps every line, naming jobs that are gone, and still sums to the balance.
      const accounts = yield* AccountRepo
      const ledger = yield* accounts.ledger(caller.account.id)
      expect(ledger).toEqual(ledgerBefore)
      const balance = Option.getOrThrow(yield* accounts.get(caller.account.id)).balanceMicroCents
      expect(ledger.reduce((sum, entry) => sum + entry.amountMicroCents, 0)).toBe(balance)
      expect(ledger.some((entry) => entry.jobId === failed && entry.kind === "refund")).toBe(true)

      // Once its webhook has gone out, the last old job goes too.
      yield* deliver(unsent, "sent")
      expect(yield* sweep).toEqual({ jobs: 1, deliveries: 1, files: 1, idempotencyKeys: 0, changes: 0 })
      expect(yield* exists(unsent)).toBe(false)
    }).pipe(Effect.provide(engine({ jobRetentionMs: 30 * DAY, retentionBatchSize: 2 }))))

  it.effect("keeps every job when no retention is set, and forgets idempotency keys after their 24 hours", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller()
      const first = yield* submit(caller, { prompt: "a" }, { key: "k1" })
      yield* runNext
      const firstFile = yield* outputKey(first)
      yield* TestClock.adjust(DAY)
      expect(yield* sweep).toEqual({ jobs: 0, deliveries: 0, files: 0, idempotencyKeys: 0, changes: 0 })
      // Still inside the window: the key answers with its job.
      expect(yield* submit(caller, { prompt: "a" }, { key: "k1" })).toBe(first)
      yield* TestClock.adjust(1)
      expect(yield* sweep).toEqual({ jobs: 0, deliveries: 0, files: 0, idempotencyKeys: 1, changes: 0 })
      yield* TestClock.adjust(365 * DAY)
      // The feed's entry of the job's ending is past its 7 days; the job itself is kept.
      expect(yield* sweep).toEqual({ jobs: 0, deliveries: 0, files: 0, idempotencyKeys: 0, changes: 1 })
      expect(yield* exists(first)).toBe(true)
      expect(yield* stored(firstFile)).toBe(true)
      expect(yield* submit(caller, { prompt: "a" }, { key: "k1" })).not.toBe(first)
    }).pipe(Effect.provide(engine({}))))

  it.effect("keeps a job as long as its Idempotency-Key can name it, even with a shorter retention", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller()
      const job = yield* submit(caller, { prompt: "a" }, { key: "k1" })
      yield* runNext
      yield* TestClock.adjust(DAY)
      expect((yield* sweep).jobs).toBe(0)
      expect(yield* submit(caller, { prompt: "a" }, { key: "k1" })).toBe(job)
      yield* TestClock.adjust(1)
      expect(yield* sweep).toEqual({ jobs: 1, deliveries: 0, files: 1, idempotencyKeys: 1, changes: 0 })
    }).pipe(Effect.provide(engine({ jobRetentionMs: HOUR }))))

  it.effect("two sweepers share the pass: one works it, the other takes over once the first stops", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller()
      const old = yield* submit(caller, { prompt: "a" })
      yield* runNext
      yield* TestClock.adjust(DAY + 1)
      const first = yield* makeSweeper
      const second = yield* makeSweeper
      expect(yield* first.sweepOnce).toEqual(Option.some({ jobs: 1, deliveries: 0, files: 1, idempotencyKeys: 0, changes: 0 }))
      expect(yield* second.sweepOnce).toEqual(Option.none())
      expect(yield* exists(old)).toBe(false)
      // The first keeps its pass while it sweeps; once it stops, the pass is free after two intervals.
      yield* TestClock.adjust(60_000)
      expect(Option.isSome(yield* first.sweepOnce)).toBe(true)
      yield* TestClock.adjust(2 * 60_000 - 1)
      expect(yield* second.sweepOnce).toEqual(Option.none())
      yield* TestClock.adjust(1)
      expect(Option.isSome(yield* second.sweepOnce)).toBe(true)
      expect(yield* first.sweepOnce).toEqual(Option.none())
    }).pipe(Effect.provide(engine({ jobRetentionMs: DAY, retentionSweepIntervalMs: 60_000 }))))

  it.effect("sweeps in the background while its scope is open; closing it lets the batch under way finish and starts no other", () =>
    Effect.gen(function*() {
      const gate = { entered: yield* Deferred.make<void>(), open: yield* Deferred.make<void>() }
      yield* Effect.gen(function*() {
        const caller = yield* demoCaller()
        const older = yield* submit(caller, { prompt: "a" })
        yield* runNext
        const olderFile = yield* outputKey(older)
        const newer = yield* submit(caller, { prompt: "b" })
        yield* runNext
        yield* TestClock.adjust(DAY + 1)
        const scope = yield* Scope.make()
        yield* Scope.provide((yield* RetentionSweeper).start, scope)
        yield* Deferred.await(gate.entered)
        const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
        yield* Effect.yieldNow
        expect(closing.pollUnsafe() === undefined).toBe(true)
        yield* Deferred.succeed(gate.open, undefined)
        yield* Fiber.join(closing)
        // The batch of one job finished, files and row; the next one never started.
        expect(yield* exists(older)).toBe(false)
        expect(yield* stored(olderFile)).toBe(false)
        expect(yield* exists(newer)).toBe(true)
        yield* TestClock.adjust(10 * 60_000)
        expect(yield* exists(newer)).toBe(true)
      }).pipe(Effect.provide(engine({ jobRetentionMs: DAY, retentionBatchSize: 1 }, filesWith(gate))))
    }))

  it.effect("closing waits for a batch under way at most drainTimeoutMs, then abandons it: it ends by itself and starts no other", () =>
    Effect.gen(function*() {
      const gate = { entered: yield* Deferred.make<void>(), open: yield* Deferred.make<void>() }
      yield* Effect.gen(function*() {
        const caller = yield* demoCaller()
        const older = yield* submit(caller, { prompt: "a" })
        yield* runNext
        const newer = yield* submit(caller, { prompt: "b" })
        yield* runNext
        yield* TestClock.adjust(DAY + 1)
        const scope = yield* Scope.make()
        yield* Scope.provide((yield* RetentionSweeper).start, scope)
        yield* Deferred.await(gate.entered)
        const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
        yield* TestClock.adjust(4_999)
        expect(closing.pollUnsafe() === undefined).toBe(true)
        // The batch is still held by its gate: the close ends on the deadline all the same.
        yield* TestClock.adjust(1)
        yield* Fiber.join(closing)
        yield* Deferred.succeed(gate.open, undefined)
        for (let i = 0; i < 1_000 && (yield* exists(older)); i++) yield* Effect.yieldNow
        expect(yield* exists(older)).toBe(false)
        yield* TestClock.adjust(10 * 60_000)
        expect(yield* exists(newer)).toBe(true)
      }).pipe(Effect.provide(engine({ jobRetentionMs: DAY, retentionBatchSize: 1, drainTimeoutMs: 5_000 }, filesWith(gate))))
    }))
})
