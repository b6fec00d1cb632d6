import { Cause, Clock, Effect, Either, Option, Schedule, type Scope } from "effect"
import { randomBytes } from "node:crypto"
import { CorruptRow, type StoreError } from "../../domain/errors.js"
import type { Job, JobError, OutputItem } from "../../domain/job.js"
import type { ProviderRouteRef } from "../../domain/providerHandle.js"
import type { ProviderError, ProviderOutput } from "../../ports/Provider.js"
import { backoff } from "../backoffSchedule.js"
import type { LeaseKeeper } from "../leaseKeeper.js"
import type { OutputRefused } from "../outputStore.js"
import type { Superseded } from "../providerCalls.js"
import type { WorkerDeps } from "./deps.js"

/** How a run ends before its result is written: the job's outputs, or why it failed; the route of a start that ended in its call. */
type Ending =
  | { readonly _tag: "Done"; readonly outputs: ReadonlyArray<OutputItem>; readonly route?: ProviderRouteRef }
  | { readonly _tag: "Failed"; readonly error: JobError; readonly route?: ProviderRouteRef }

type OutputError = OutputRefused | ProviderError | StoreError

const internal = (message: string): JobError => ({ code: "INTERNAL_ERROR", message })

const sameOutputs = (job: Job, outputs: ReadonlyArray<OutputItem>) =>
  job.status === "completed" && job.outputs !== null && job.outputs.map((o) => o.url).join("\n") === outputs.map((o) => o.url).join("\n")

/** A store that did not answer, or not in time: a retry may get through, unlike a row that does not decode (CorruptRow). */
const isStoreFault = (error: { readonly _tag: string; readonly cause?: unknown }) =>
  error._tag === "StoreError" && !(error.cause instanceof CorruptRow)

/**
 * A store read or write whose store faults are retried with the shared backoff until it gets
 * through: a store fault is the engine's, never the job's. The retries end with the run, when
 * the lease is lost (the run is raced with it), and the job goes back to the queue for a later
 * claim to resume. Other errors go through.
 */
const untilStored = <A, E extends { readonly _tag: string; readonly message: string }, R>(
  config: WorkerDeps["config"],
  what: string,
  jobId: Job["id"],
  effect: Effect.Effect<A, E, R>
) =>
  effect.pipe(
    Effect.tapError((error) => (isStoreFault(error) ? Effect.logWarning(`${what}; retrying`, { jobId }, error.message) : Effect.void)),
    Effect.retry({ schedule: backoff(config.storeRetry), while: isStoreFault })
  )

const isCorruptRow = (error: Superseded | StoreError): error is StoreError => error._tag === "StoreError" && error.cause instanceof CorruptRow

/**
 * Stores the outputs. A BlobStore fault is retried as any store fault is (untilStored); a
 * transient failure of the provider's file host is fetched again at most
 * `providerRetry.maxRetries` times in a row; a refused output fails the job.
 */
const storeOutputs = (
  { config, files }: Pick<WorkerDeps, "config" | "files">,
  job: Job,
  attempt: string,
  outputs: ReadonlyArray<ProviderOutput>,
  written: Array<string>
): Effect.Effect<Ending, StoreError> =>
  untilStored(config, "a job's outputs could not be stored", job.id, files.store(job.id, attempt, outputs, written)).pipe(
    Effect.retry({
      schedule: backoff(config.providerRetry, (error: OutputError) => (error._tag === "ProviderRejected" ? error.retryAfterMs : undefined)).pipe(
        Schedule.intersect(Schedule.recurs(config.providerRetry.maxRetries))
      ),
      while: (error) => error._tag === "ProviderUnreachable" || (error._tag === "ProviderRejected" && error.retryable)
    }),
    Effect.map((stored): Ending => ({ _tag: "Done", outputs: stored })),
    Effect.catchIf(
      (error): error is OutputRefused | ProviderError => error._tag !== "StoreError",
      (error) => Effect.succeed<Ending>({ _tag: "Failed", error: { code: "GENERATION_FAILED", message: error.message } })
    )
  )

/**
 * Runs the job at its provider and stores what it made; Superseded when the lease was lost on
 * the way, a StoreError only if a store's retries ever ended before the lease did.
 */
const execute = (
  deps: Pick<WorkerDeps, "catalog" | "calls" | "config" | "files">,
  job: Job,
  workerId: string,
  attempt: string,
  written: Array<string>
): Effect.Effect<Ending, Superseded | StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const resolved = yield* untilStored(
      deps.config,
      "a job's model could not be read from the catalog",
      job.id,
      deps.catalog.forJob(job.model, job.version)
    )
    if (resolved === undefined || resolved.version.status === "disabled" || resolved.version.status === "deleted") {
      return { _tag: "Failed", error: internal(`The model version ${job.model}@${job.version} is no longer available`) } as const
    }
    const generation = yield* deps.calls.generate(job, workerId, resolved.model, resolved.version)
    if (generation._tag === "Failed") return generation
    const stored = yield* storeOutputs(deps, job, attempt, generation.outputs, written)
    return generation.route === undefined ? stored : { ...stored, route: generation.route }
  }).pipe(
    // A retry reads the same row: the job cannot run, and fails at once with a refund.
    Effect.catchIf(isCorruptRow, (error) =>
      Effect.logError("a job's run read a row it cannot decode", { jobId: job.id }, error.message).pipe(
        Effect.as({ _tag: "Failed", error: internal("The job failed for an internal reason; its cost was refunded") } as const)
      )),
    Effect.catchAllDefect((defect) =>
      Effect.logError("job run failed unexpectedly", { jobId: job.id }, Cause.pretty(Cause.die(defect))).pipe(
        Effect.as({ _tag: "Failed", error: internal("The job failed for an internal reason; its cost was refunded") } as const)
      )
    )
  )

/**
 * Writes how the job ended, retrying store errors with backoff for as long as the race with
 * the lease lets it (instead of leaving the job to wait out its lease and run again).
 */
const settle = ({ config, repo }: Pick<WorkerDeps, "config" | "repo">, job: Job, workerId: string, ending: Ending) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    ending._tag === "Done"
      ? repo.complete(job.id, workerId, ending.outputs, now, ending.route)
      : repo.fail(job.id, workerId, ending.error, now, ending.route)).pipe(
      Effect.tapError((error) => Effect.logWarning("a job's result could not be written; retrying", { jobId: job.id }, error.message)),
      Effect.retry(backoff(config.storeRetry))
    )

/**
 * Runs one claimed job under its lease, kept by `keeper` until the run ends. A run whose lease
 * is lost stops where it is; files it wrote under its attempt's keys are removed unless its
 * completion is the one that was written.
 */
export const runJob = (deps: WorkerDeps, job: Job, workerId: string, leaseExpiresAt: number, keeper: LeaseKeeper) =>
  Effect.scoped(Effect.gen(function*() {
    const { files, repo, webhookSignal } = deps
    const lost = yield* keeper.hold(job.id, workerId, leaseExpiresAt)
    const attempt = randomBytes(4).toString("hex")
    const written: Array<string> = []
    const ran = yield* Effect.raceFirst(
      Effect.either(execute(deps, job, workerId, attempt, written)).pipe(Effect.map(Option.some)),
      lost.pipe(Effect.as(Option.none()))
    )
    if (Option.isNone(ran) || ran.value._tag === "Left") {
      // The job stays processing under the lost lease, or another claim has it already: either way the next run resumes it.
      yield* Effect.logWarning("lease lost; the run stops and the job is left to the next claim", { jobId: job.id })
      return yield* files.remove(written)
    }
    const ending = ran.value.right
    const settled = yield* Effect.raceFirst(settle(deps, job, workerId, ending).pipe(Effect.map(Option.some)), lost.pipe(Effect.as(Option.none())))
    const ended = Option.flatten(settled)
    if (Option.isSome(ended)) {
      // Its webhook was written with the final state and is due now: dispatchers need not wait for their poll.
      if (ended.value.webhookUrl !== null) yield* webhookSignal.notify
      if (ending._tag === "Failed") yield* files.remove(written)
      return
    }
    // Superseded, or its answer lost: the files stay only if this run's completion is the one
    // stored, or may be (the store cannot tell now): an unreferenced file is the retention
    // sweep's to take, a referenced one removed would be a completed job's output lost.
    if (ending._tag === "Failed") return yield* files.remove(written)
    const stored = yield* Effect.either(repo.get(job.id))
    if (Either.isLeft(stored)) {
      return yield* Effect.logWarning("the job ended elsewhere or its end was not read back; this run's files stay", { jobId: job.id })
    }
    const ours = Option.isSome(stored.right) && sameOutputs(stored.right.value, ending.outputs)
    if (!ours) {
      yield* Effect.logWarning("the job ended elsewhere; this run's files are removed", { jobId: job.id })
      yield* files.remove(written)
    }
  }))
