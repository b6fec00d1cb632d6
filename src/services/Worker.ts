import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Ref } from "effect"
import { randomBytes } from "node:crypto"
import type { StoreError } from "../domain/errors.js"
import type { Job, JobError, OutputItem } from "../domain/job.js"
import { BlobStore } from "../ports/BlobStore.js"
import { type GeneratedFile, type GeneratedOutput, Generators } from "../ports/Generator.js"
import { JobRepo } from "../ports/JobRepo.js"
import { JobSignal } from "../ports/JobSignal.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { Catalog } from "./Catalog.js"
import { EngineConfig } from "./EngineConfig.js"

const internal = (message: string): JobError => ({ code: "INTERNAL_ERROR", message })

export const make = Effect.gen(function*() {
  const repo = yield* JobRepo
  const catalog = yield* Catalog
  const generators = yield* Generators
  const blobs = yield* BlobStore
  const signal = yield* JobSignal
  const webhookSignal = yield* WebhookSignal
  const config = yield* EngineConfig

  const storeFile = (key: string, file: GeneratedFile) =>
    blobs.put(`${key}.${file.extension}`, { bytes: file.bytes, contentType: file.contentType })

  const storeOutput = (job: Job, index: number, output: GeneratedOutput): Effect.Effect<OutputItem, StoreError> =>
    Effect.gen(function*() {
      const key = `${job.id}-${index}`
      const url = yield* storeFile(key, output.file)
      const thumbnail = output.thumbnail === undefined ? undefined : yield* storeFile(`${key}-thumb`, output.thumbnail)
      const posterImage = output.posterImage === undefined ? undefined : yield* storeFile(`${key}-poster`, output.posterImage)
      return {
        url,
        type: output.type,
        contentType: output.file.contentType,
        ...(thumbnail === undefined ? {} : { thumbnail }),
        ...(posterImage === undefined ? {} : { posterImage }),
        ...(output.metadata === undefined ? {} : { metadata: output.metadata })
      }
    })

  /** Runs the provider and stores what it made; the result says how the job ends. */
  const generate = (job: Job): Effect.Effect<
    { readonly _tag: "Done"; readonly outputs: ReadonlyArray<OutputItem> } | { readonly _tag: "Failed"; readonly error: JobError }
  > =>
    Effect.gen(function*() {
      const resolved = yield* catalog.forJob(job.model, job.version)
      if (resolved === undefined || resolved.version.status === "disabled" || resolved.version.status === "deleted") {
        return { _tag: "Failed", error: internal(`The model version ${job.model}@${job.version} is no longer available`) } as const
      }
      const generator = generators.forProvider(resolved.model.providerId)
      if (Option.isNone(generator)) {
        return { _tag: "Failed", error: internal(`No generator is registered for provider "${resolved.model.providerId}"`) } as const
      }
      const made = yield* Effect.either(generator.value.generate({ job, ...resolved }))
      if (made._tag === "Left") return { _tag: "Failed", error: { code: "GENERATION_FAILED", message: made.left.message } } as const
      const outputs = yield* Effect.forEach(made.right, (output, i) => storeOutput(job, i, output))
      return { _tag: "Done", outputs } as const
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.logError("job run failed unexpectedly", { jobId: job.id }, Cause.pretty(cause)).pipe(
          Effect.as({ _tag: "Failed", error: internal("The job failed for an internal reason; its cost was refunded") } as const)
        )
      )
    )

  /** Keeps the lease alive while the job runs; ends (and so interrupts the run) when the lease is lost. */
  const holdLease = (job: Job, workerId: string) =>
    Effect.gen(function*() {
      while (true) {
        yield* Effect.sleep(Duration.millis(Math.max(1, Math.floor(config.leaseMs / 3))))
        const now = yield* Clock.currentTimeMillis
        const held = yield* repo.renewLease(job.id, workerId, now + config.leaseMs).pipe(Effect.orElseSucceed(() => true))
        if (!held) return
      }
    })

  const runJob = (job: Job, workerId: string) =>
    Effect.gen(function*() {
      const result = yield* Effect.raceFirst(
        generate(job).pipe(Effect.map(Option.some)),
        holdLease(job, workerId).pipe(Effect.as(Option.none()))
      )
      if (Option.isNone(result)) {
        yield* Effect.logWarning("lease lost; another worker owns the job now", { jobId: job.id })
        return
      }
      const now = yield* Clock.currentTimeMillis
      const ended = result.value._tag === "Done"
        ? yield* repo.complete(job.id, workerId, result.value.outputs, now)
        : yield* repo.fail(job.id, workerId, result.value.error, now)
      // Its webhook was written with the final state and is due now: dispatchers need not wait for their poll.
      if (Option.isSome(ended) && ended.value.webhookUrl !== null) yield* webhookSignal.notify
    })

  /** Claims and runs one job; false when there was none. */
  const runOnce = (workerId: string): Effect.Effect<boolean, StoreError> =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claimed = yield* repo.claim({ workerId, now, leaseMs: config.leaseMs, maxAttempts: config.maxAttempts })
      if (Option.isNone(claimed)) return false
      yield* runJob(claimed.value, workerId)
      return true
    })

  /**
   * Starts `concurrency` worker loops in the current scope. Closing the scope drains: no new
   * claims, running jobs get `drainTimeoutMs` to finish; a job cut off later is retried by
   * another worker once its lease expires.
   */
  const start = (concurrency: number) =>
    Effect.gen(function*() {
      const draining = yield* Ref.make(false)
      const processId = randomBytes(6).toString("hex")
      const loop = (n: number) =>
        Effect.gen(function*() {
          const workerId = `wrk_${processId}_${n}`
          while (!(yield* Ref.get(draining))) {
            const exit = yield* Effect.exit(runOnce(workerId))
            if (Exit.isFailure(exit)) {
              yield* Effect.logError("worker could not reach the store", Cause.pretty(exit.cause))
              yield* Effect.sleep(Duration.millis(config.pollIntervalMs))
            } else if (!exit.value) {
              yield* signal.wait(config.pollIntervalMs)
            }
          }
        })
      const fibers = yield* Effect.forEach(
        Array.from({ length: concurrency }, (_, n) => n),
        (n) => Effect.forkScoped(loop(n))
      )
      yield* Effect.addFinalizer(() =>
        Ref.set(draining, true).pipe(
          Effect.zipRight(signal.notify),
          Effect.zipRight(Fiber.joinAll(fibers).pipe(Effect.timeout(Duration.millis(config.drainTimeoutMs)), Effect.ignore))
        )
      )
    })

  return { runOnce, start } as const
})

export class Worker extends Context.Tag("genjobs/Worker")<Worker, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Worker, make)
}
