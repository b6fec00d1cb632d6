import { Cause, Clock, Context, Duration, Effect, Exit, Fiber, Layer, Option, Queue, Ref } from "effect"
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

/** Jobs one reaper pass fails at most; a larger backlog of them takes several passes. */
const REAP_LIMIT = 100

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

  const claimUpTo = (workerId: string, limit: number) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      repo.claimBatch({ workerId, now, leaseMs: config.leaseMs, maxAttempts: config.maxAttempts, limit }))

  /** Claims and runs one job; false when there was none. */
  const runOnce = (workerId: string): Effect.Effect<boolean, StoreError> =>
    Effect.gen(function*() {
      const [claimed] = yield* claimUpTo(workerId, 1)
      if (claimed === undefined) return false
      yield* runJob(claimed, workerId)
      return true
    })

  /** One reaper pass, if this process holds (or takes) the pass; answers the jobs it failed. */
  const reapOnce = (workerId: string): Effect.Effect<number, StoreError> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      repo.reap({ workerId, now, passMs: 2 * config.reapIntervalMs, maxAttempts: config.maxAttempts, limit: REAP_LIMIT }))

  /**
   * Starts `concurrency` worker fibers fed by one claimer, and the reaper pass, in the current
   * scope. The claimer takes as many jobs as there are idle fibers in one claim (each claim its
   * own lease owner) and queues them in a local buffer the fibers take from; with none to take
   * it waits for a signal or the poll interval. Closing the scope drains: no new claims,
   * running jobs get `drainTimeoutMs` to finish; a job cut off later is retried by another
   * worker once its lease expires.
   */
  const start = (concurrency: number) =>
    Effect.gen(function*() {
      const processId = randomBytes(6).toString("hex")
      const buffer = yield* Queue.unbounded<Job>()
      // Fibers neither running nor promised a buffered job; only the claimer takes from it.
      const idle = yield* Ref.make(concurrency)
      // A fiber finished: wakes a claimer waiting for capacity, or the drain.
      const freed = yield* Queue.sliding<void>(1)
      const runner = Effect.forever(
        Queue.take(buffer).pipe(
          Effect.flatMap((job) => runJob(job, job.leaseOwner!)),
          Effect.ensuring(Ref.update(idle, (n) => n + 1).pipe(Effect.zipRight(Queue.offer(freed, undefined))))
        )
      )
      let claims = 0
      const claimer = Effect.gen(function*() {
        while (true) {
          const free = yield* Ref.get(idle)
          if (free === 0) {
            yield* Queue.take(freed)
            continue
          }
          // Uninterruptible from the claim to the buffer: a drain never strands claimed jobs.
          const exit = yield* Effect.exit(Effect.uninterruptible(
            claimUpTo(`wrk_${processId}_${++claims}`, free).pipe(
              Effect.tap((jobs) => Ref.update(idle, (n) => n - jobs.length).pipe(Effect.zipRight(Queue.offerAll(buffer, jobs))))
            )
          ))
          if (Exit.isFailure(exit)) {
            yield* Effect.logError("worker could not reach the store", Cause.pretty(exit.cause))
            yield* Effect.sleep(Duration.millis(config.pollIntervalMs))
          } else if (exit.value.length < free) {
            // The queue ran dry: a submit signals, and the poll covers a lost signal.
            yield* signal.wait(config.pollIntervalMs)
          }
        }
      })
      const reaper = Effect.gen(function*() {
        while (true) {
          yield* Effect.sleep(Duration.millis(config.reapIntervalMs))
          const exit = yield* Effect.exit(reapOnce(`rpr_${processId}`))
          if (Exit.isFailure(exit)) yield* Effect.logError("the reaper could not reach the store", Cause.pretty(exit.cause))
        }
      })
      const runners = yield* Effect.forEach(Array.from({ length: concurrency }), () => Effect.forkScoped(runner))
      const background = [yield* Effect.forkScoped(claimer), yield* Effect.forkScoped(reaper)]
      const drained = Effect.gen(function*() {
        while ((yield* Ref.get(idle)) < concurrency) yield* Queue.take(freed)
      })
      yield* Effect.addFinalizer(() =>
        Fiber.interruptAll(background).pipe(
          Effect.zipRight(drained.pipe(Effect.timeout(Duration.millis(config.drainTimeoutMs)), Effect.ignore)),
          Effect.zipRight(Fiber.interruptAll(runners))
        )
      )
    })

  return { runOnce, reapOnce, start } as const
})

export class Worker extends Context.Tag("genjobs/Worker")<Worker, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Worker, make)
}
