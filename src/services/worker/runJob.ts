import { Cause, Effect, Option, Result, Schedule } from "effect"
import { randomBytes } from "node:crypto"
import { CorruptRow, type StoreError } from "../../domain/errors.js"
import type { Job, JobError, OutputItem } from "../../domain/job.js"
import type { ProviderRouteRef } from "../../domain/providerHandle.js"
import { failureOf } from "../../domain/failureTaxonomy.js"
import { factOfError, type ProviderError, type ProviderOutput } from "../../ports/Provider.js"
import { backoff } from "../backoffSchedule.js"
import type { Lease } from "../leaseKeeper.js"
import type { OutputRefused } from "../outputStore.js"
import { type Generation, type JobRunBook, Superseded, type Watching, type WatchOutcome } from "../providerCalls.js"
import type { WorkerDeps } from "./deps.js"
import { afterFailure, retryOnFailure } from "./retryOnFailure.js"

/** How a run ends before its result is written: the job's outputs, or why it failed; the route of a start that ended in its call. */
type Ending =
  | { readonly _tag: "Done"; readonly outputs: ReadonlyArray<OutputItem>; readonly route?: ProviderRouteRef }
  | { readonly _tag: "Failed"; readonly error: JobError; readonly route?: ProviderRouteRef }

type OutputError = OutputRefused | ProviderError | StoreError

/** The engine's own failure: a version no longer runnable, a row it cannot read, a defect. */
const internal = (message: string, reason: "notRunnable" | "unreadable"): JobError =>
  failureOf("INTERNAL_ERROR", message, { _tag: "Engine", reason })

const sameOutputs = (job: Job, outputs: ReadonlyArray<OutputItem>) =>
  job.status === "completed" && job.outputs !== null && job.outputs.map((o) => o.url).join("\n") === outputs.map((o) => o.url).join("\n")

/** A store that did not answer, or not in time: a retry may get through, unlike a row that does not decode (CorruptRow). */
const isStoreFault = (error: { readonly _tag: string; readonly cause?: unknown }) =>
  error._tag === "StoreError" && !(error.cause instanceof CorruptRow)

/**
 * A store read or write whose store faults are retried with the shared backoff until it gets
 * through: a store fault is the engine's, never the job's. The retries end when the lease is
 * lost, and the job goes back to the queue for a later claim to resume. Other errors go
 * through. Nothing of the retry is built while the first try succeeds.
 */
const untilStored = <A, E extends { readonly _tag: string; readonly message: string }, R>(
  config: WorkerDeps["config"],
  lease: Lease,
  what: string,
  effect: Effect.Effect<A, E, R>
) => {
  const logged = (error: E) => (isStoreFault(error) ? Effect.logWarning(`${what}; retrying`, { jobId: lease.id }, error.message) : Effect.void)
  // One catch while the first try gets through; the log and the retries only after it failed.
  return Effect.catch(effect, (first) =>
    Effect.andThen(
      logged(first),
      retryOnFailure(
        afterFailure(first, Effect.tapError(effect, logged)),
        () => ({ schedule: backoff(config.storeRetry), while: (error) => isStoreFault(error) && !lease.lost })
      )
    ))
}

/**
 * The attempt's part of its output files' keys: random, so a superseded run's files never take
 * another run's keys. Drawn only when there are outputs to store.
 */
const attemptKey = (outputs: ReadonlyArray<ProviderOutput>) => (outputs.length === 0 ? "" : randomBytes(4).toString("hex"))

/** The route of a start that ended in its call, kept with the job's end (no handle recorded it). */
const onRoute = (route: ProviderRouteRef | undefined) => (route === undefined ? {} : { route })

const isCorruptRow = (error: Superseded | StoreError): error is StoreError => error._tag === "StoreError" && error.cause instanceof CorruptRow

/**
 * Stores the outputs, the job's end on `route` (see onRoute). A BlobStore fault is retried as
 * any store fault is (untilStored); a transient failure of the provider's file host is fetched
 * again at most `providerRetry.maxRetries` times in a row; a refused output fails the job.
 */
const storeOutputs = (
  { config, files }: Pick<WorkerDeps, "config" | "files">,
  lease: Lease,
  outputs: ReadonlyArray<ProviderOutput>,
  written: Array<string>,
  route: ProviderRouteRef | undefined
): Effect.Effect<Ending, StoreError> => {
  const done = (stored: ReadonlyArray<OutputItem>): Ending => ({ _tag: "Done", outputs: stored, ...onRoute(route) })
  // A generation without outputs (an empty result) has nothing to store: it is done as it is.
  if (outputs.length === 0) return Effect.succeed(done([]))
  const store = files.store(lease.id, attemptKey(outputs), outputs, written)
  // One catch while the first try stores them; the retries and the refusal's handling only after it failed.
  return Effect.catch(Effect.map(store, done), (first) =>
    untilStored(config, lease, "a job's outputs could not be stored", afterFailure(first, store)).pipe(
      (stored) => retryOnFailure(stored, () => ({
        schedule: backoff(config.providerRetry, (error: OutputError) => (error._tag === "ProviderRejected" ? error.retryAfterMs : undefined)).pipe(
          Schedule.upTo({ times: config.providerRetry.maxRetries })
        ),
        while: (error: OutputError) => error._tag === "ProviderUnreachable" || (error._tag === "ProviderRejected" && error.retryable)
      })),
      Effect.map(done),
      Effect.catchIf(
        (error): error is OutputRefused | ProviderError => error._tag !== "StoreError",
        (error) =>
          Effect.succeed<Ending>({
            _tag: "Failed",
            error: failureOf("GENERATION_FAILED", error.message, error._tag === "OutputRefused" ? { _tag: "OutputRejected" } : factOfError(error)),
            ...onRoute(route)
          })
      )
    ))
}

/** A run that read a row it cannot decode, or met a defect: the job fails with a refund instead of being left to its lease. */
const unreadable: Ending = {
  _tag: "Failed",
  error: internal("The job failed for an internal reason; its cost was refunded", "unreadable")
}

/**
 * After the generation ended: its outputs stored, or its failure; Superseded when the lease was
 * lost by then. Called when the run reaches this step (the lease is read then). The per-job steps
 * below are plain functions over Effects, not generators: a run allocates no generator, nor its
 * frames, per step.
 */
const afterGeneration = (
  deps: Pick<WorkerDeps, "config" | "files">,
  run: JobRunBook,
  generation: Generation,
  written: Array<string>
): Effect.Effect<Ending, Superseded | StoreError> => {
  if (generation._tag === "Failed") return Effect.succeed(generation)
  if (run.lease.lost) return Effect.fail(new Superseded())
  return storeOutputs(deps, run.lease, generation.outputs, written, generation.route)
}

/**
 * Runs the job at its provider and stores what it made, or answers Watching when its started
 * generation joined the watch list (its end comes later, through the book's `ended`);
 * Superseded when the lease was lost on the way (each step checks it; the store's conditional
 * writes refuse a lost lease anyway), a StoreError only if a store's retries ended with the lease.
 */
const execute = (
  deps: Pick<WorkerDeps, "catalog" | "calls" | "config" | "files">,
  job: Job,
  run: JobRunBook,
  written: Array<string>
): Effect.Effect<Ending | Watching, Superseded | StoreError> =>
  Effect.flatMap(
    untilStored(deps.config, run.lease, "a job's model could not be read from the catalog", deps.catalog.forJob(job.model, job.version)),
    (resolved): Effect.Effect<Ending | Watching, Superseded | StoreError> => {
      if (resolved === undefined || resolved.version.status === "disabled" || resolved.version.status === "deleted") {
        return Effect.succeed({ _tag: "Failed", error: internal(`The model version ${job.model}@${job.version} is no longer available`, "notRunnable") })
      }
      if (run.lease.lost) return Effect.fail(new Superseded())
      return Effect.flatMap(
        deps.calls.generate(job, run, resolved.model, resolved.version),
        (generation): Effect.Effect<Ending | Watching, Superseded | StoreError> =>
          generation._tag === "Watching" ? Effect.succeed(generation) : afterGeneration(deps, run, generation, written)
      )
    }
  )

/**
 * Writes how the job ended, retrying store errors with backoff for as long as the lease is held
 * (instead of leaving the job to wait out its lease and run again). None when the write found
 * the job no longer this run's, or the lease was lost before it got through. Each try reads the
 * clock in its own first step.
 */
const settle = ({ config, repo }: Pick<WorkerDeps, "config" | "repo">, job: Job, lease: Lease, ending: Ending) => {
  const write = Effect.clockWith((clock) =>
    ending._tag === "Done"
      ? repo.complete(job.id, lease.workerId, ending.outputs, clock.currentTimeMillisUnsafe(), ending.route)
      : repo.fail(job.id, lease.workerId, ending.error, clock.currentTimeMillisUnsafe(), ending.route))
  const logged = (error: StoreError) => Effect.logWarning("a job's result could not be written; retrying", { jobId: job.id }, error.message)
  // One catch while the first write gets through; the log and the retries only after it failed.
  return Effect.catch(write, (first) =>
    Effect.andThen(
      logged(first),
      retryOnFailure(afterFailure(first, Effect.tapError(write, logged)), () => ({ schedule: backoff(config.storeRetry), while: () => !lease.lost }))
    ).pipe(Effect.orElseSucceed(() => Option.none<Job>())))
}

/**
 * The end of a run whose write found the job no longer this run's (superseded, or its answer
 * lost): the files stay only if this run's completion is the one stored, or may be (the store
 * cannot tell now): an unreferenced file is the retention sweep's to take, a referenced one
 * removed would be a completed job's output lost.
 */
const unsettled = Effect.fnUntraced(function*(
  { files, repo }: Pick<WorkerDeps, "files" | "repo">,
  job: Job,
  written: Array<string>,
  ending: Ending
) {
  if (ending._tag === "Failed") return yield* files.remove(written)
  const stored = yield* Effect.result(repo.get(job.id))
  if (Result.isFailure(stored)) {
    return yield* Effect.logWarning("the job ended elsewhere or its end was not read back; this run's files stay", { jobId: job.id })
  }
  const ours = Option.isSome(stored.success) && sameOutputs(stored.success.value, ending.outputs)
  if (!ours) {
    yield* Effect.logWarning("the job ended elsewhere; this run's files are removed", { jobId: job.id })
    yield* files.remove(written)
  }
})

/** Called once as a run's end is written, when the worker gives its slot back then (see concluded). */
export type FreeSlot = (() => void) | undefined

/** A run that is over: its job's lease and holds may go (runJob's answer). */
const over = Effect.succeed(false)

/**
 * The run's end once its generation ended: how it ended written, its files kept or removed.
 * Answers false, runJob's answer for a run that is over, in the write's own continuation.
 * `freeSlot`, when given, is called as a completion is written: the run is over for its
 * provider, so its slot may take the next job while the completion waits for its batch
 * (docs/decisions.md, "Claiming ahead on PostgreSQL"). A failure's write is not batched: its
 * slot frees when it is written, as before.
 */
const concluded = (deps: WorkerDeps, job: Job, run: JobRunBook, written: Array<string>, ending: Ending, freeSlot: FreeSlot): Effect.Effect<boolean> => {
  const { files, webhookSignal } = deps
  if (ending._tag === "Done") freeSlot?.()
  return Effect.flatMap(settle(deps, job, run.lease, ending), (ended) => {
    if (Option.isNone(ended)) return Effect.as(unsettled(deps, job, written, ending), false)
    // Its webhook was written with the final state and is due now: dispatchers need not wait for their poll.
    const notified = ended.value.webhookUrl === null ? over : Effect.as(webhookSignal.notify, false)
    return ending._tag === "Failed" && written.length > 0 ? Effect.andThen(files.remove(written), notified) : notified
  })
}

/** The run stopped at a lost lease (or a store's retries ended with it): the job stays processing under that lease, or another claim has it already; either way the next run resumes it. */
const lost = ({ files }: Pick<WorkerDeps, "files">, job: Job, written: Array<string>): Effect.Effect<boolean> =>
  Effect.andThen(
    Effect.logWarning("lease lost; the run stops and the job is left to the next claim", { jobId: job.id }),
    Effect.as(files.remove(written), false)
  )

/**
 * A run's steps that failed. The lease lost (Superseded), or a store's retries ended with it:
 * the run stops. A row it cannot decode (a retry reads the same row) or a defect: the job fails
 * at once with a refund instead of being left to its lease. An interruption goes through.
 */
const failedRun = (
  deps: WorkerDeps,
  job: Job,
  run: JobRunBook,
  written: Array<string>,
  cause: Cause.Cause<Superseded | StoreError>,
  freeSlot: FreeSlot
): Effect.Effect<boolean> => {
  const error = Cause.findErrorOption(cause)
  if (Option.isSome(error) && isCorruptRow(error.value)) {
    return Effect.andThen(
      Effect.logError("a job's run read a row it cannot decode", { jobId: job.id }, error.value.message),
      concluded(deps, job, run, written, unreadable, freeSlot)
    )
  }
  const defect = Cause.findDefect(cause)
  if (Result.isSuccess(defect)) {
    return Effect.andThen(
      Effect.logError("job run failed unexpectedly", { jobId: job.id }, Cause.pretty(Cause.die(defect.success))),
      concluded(deps, job, run, written, unreadable, freeSlot)
    )
  }
  // Neither an error nor a defect: only interruptions, which carry no error of the run's.
  return Option.isSome(error) ? lost(deps, job, written) : Effect.failCause(cause as Cause.Cause<never>)
}

/**
 * Runs one claimed job under `run`'s lease, which the keeper renews until the run's holder
 * releases it. A run whose lease is lost stops at its next step; files it wrote under its
 * attempt's keys are removed unless its completion is the one that was written. Answers true
 * when the job's generation was started and joined the watch list: the run goes on in
 * `endWatched` once it ends, and the job's lease and holds stay held until then. The run's
 * outcome, however it went, is taken in one step (a match), not caught and matched again.
 */
export const runJob = (deps: WorkerDeps, job: Job, run: JobRunBook, freeSlot?: FreeSlot): Effect.Effect<boolean> =>
  Effect.suspend(() => {
    const written: Array<string> = []
    return Effect.matchCauseEffect(execute(deps, job, run, written), {
      onSuccess: (ran) => (ran._tag === "Watching" ? Effect.succeed(true) : concluded(deps, job, run, written, ran, freeSlot)),
      onFailure: (cause) => failedRun(deps, job, run, written, cause, freeSlot)
    })
  })

/** The second half of a watched job's run: its generation's end (outputs stored, the end written), or the lease's loss. */
export const endWatched = (deps: WorkerDeps, job: Job, run: JobRunBook, outcome: WatchOutcome, freeSlot?: FreeSlot): Effect.Effect<void> =>
  Effect.suspend(() => {
    // Its lease is written back already: nothing to write, only what it held to release.
    if (outcome._tag === "HandedBack") return Effect.void
    if (outcome._tag === "Superseded") return Effect.asVoid(lost(deps, job, []))
    const written: Array<string> = []
    return Effect.asVoid(Effect.matchCauseEffect(afterGeneration(deps, run, outcome, written), {
      onSuccess: (ending) => concluded(deps, job, run, written, ending, freeSlot),
      onFailure: (cause) => failedRun(deps, job, run, written, cause, freeSlot)
    }))
  })
