import { Clock, Data, Duration, Effect, Option, Queue, Schedule, type Scope } from "effect"
import type { StoreError } from "../domain/errors.js"
import { type Job, type JobError, startMarkedByClaim } from "../domain/job.js"
import type { ProviderHandle, ProviderState } from "../domain/providerHandle.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"
import {
  type GenerationProvider,
  isOutage,
  type ProviderError,
  type ProviderOutput,
  type ProviderRequest,
  type ProviderStatus
} from "../ports/Provider.js"
import { backoff } from "./backoffSchedule.js"
import { EngineConfig } from "./EngineConfig.js"

/** How a job's generation ended, as far as the provider is concerned. */
export type Generation =
  | { readonly _tag: "Succeeded"; readonly outputs: ReadonlyArray<ProviderOutput> }
  | { readonly _tag: "Failed"; readonly error: JobError }

/** The worker no longer holds the job's lease: it must stop and write nothing more. */
export class Superseded extends Data.TaggedError("Superseded")<{}> {}

const generationFailed = (message: string): Generation => ({ _tag: "Failed", error: { code: "GENERATION_FAILED", message } })

const unconfirmedStart: Generation = {
  _tag: "Failed",
  error: {
    code: "INTERNAL_ERROR",
    message: "The provider start could not be confirmed; the job was not started again and its cost was refunded"
  }
}

const providerUnavailable = (waitedSeconds: number, message: string): Generation => ({
  _tag: "Failed",
  error: {
    code: "PROVIDER_UNAVAILABLE",
    message: `The provider could not take the job within ${waitedSeconds} seconds (${message}); nothing was started and its cost was refunded`
  }
})

const ended = (status: Exclude<ProviderStatus, { readonly _tag: "Running" }>): Generation =>
  status._tag === "Succeeded" ? status : generationFailed(status.message)

/** How long a start waits out a provider outage when the version sets no `provider.timeoutSeconds`. */
const DEFAULT_OUTAGE_WAIT_SECONDS = 60 * 60

/** Stops a schedule at `deadline` (epoch ms): no wait runs past it, and none starts after it. */
const until = (deadline: number) => <Out, In, R>(schedule: Schedule.Schedule<Out, In, R>) =>
  schedule.pipe(
    Schedule.checkEffect(() => Effect.map(Clock.currentTimeMillis, (now) => now < deadline)),
    Schedule.modifyDelayEffect((_, delay) =>
      Effect.map(Clock.currentTimeMillis, (now) => Duration.min(delay, Duration.millis(Math.max(0, deadline - now)))))
  )

const retryAfterOf = (error: ProviderError | Superseded) => (error._tag === "ProviderRejected" ? error.retryAfterMs : undefined)

/** Provably nothing started: the provider refused, or never got the request. */
const nothingStarted = (error: ProviderError) => error._tag === "ProviderRejected" || error.notSent

/**
 * A job's generation at its provider, started at most once. The phase `starting` is committed
 * before `start` is called (by the first pickup's claim, or by the run for a later start) and
 * the handle right after it answers; a worker that finds a handle
 * polls it, one that finds `starting` without a handle asks `recover` or fails the job with a
 * refund, since the provider may have started. Only a start the provider refused, or one whose
 * request provably never reached it, is asked again.
 */
export const makeProviderCalls = Effect.gen(function*() {
  const repo = yield* JobRepo
  const events = yield* JobEvents
  const config = yield* EngineConfig

  /** Retries a store write on StoreError (the race with the lease ends it); fails with Superseded when the lease was lost. */
  const storeWrite = (write: Effect.Effect<boolean, StoreError>): Effect.Effect<void, Superseded> =>
    write.pipe(
      Effect.tapError((error) => Effect.logWarning("a job's provider state could not be written; retrying", error.message)),
      Effect.retry(backoff<StoreError>(config.storeRetry)),
      Effect.orDie,
      Effect.flatMap((written) => (written ? Effect.void : Effect.fail(new Superseded())))
    )

  /** Transient errors in a row, retried after capped exponential backoff with full jitter, never sooner than Retry-After. */
  const transientRetries = backoff(config.providerRetry, retryAfterOf).pipe(Schedule.intersect(Schedule.recurs(config.providerRetry.maxRetries)))

  /**
   * Runs a provider call, retrying its transient errors (a retryable rejection; no answer when
   * `unreachableIsTransient`) at most `providerRetry.maxRetries` times in a row.
   */
  const retrying = <A>(call: Effect.Effect<A, ProviderError>, unreachableIsTransient: boolean): Effect.Effect<A, ProviderError> =>
    Effect.retry(call, {
      schedule: transientRetries,
      while: (error) => (error._tag === "ProviderRejected" ? error.retryable : unreachableIsTransient)
    })

  /** Hints for the job (a verified provider callback publishes one): each wakes a waiting poll at once. */
  const hintsFor = (job: Job): Effect.Effect<Queue.Dequeue<void>, never, Scope.Scope> =>
    Effect.gen(function*() {
      const hints = yield* Queue.sliding<void>(1)
      // subscribe calls back synchronously; a sliding queue of one never blocks that.
      yield* events.subscribe(job.id, () => Queue.unsafeOffer(hints, undefined))
      return hints
    })

  /**
   * Polls a started generation until it ends or its deadline passes (then it is cancelled at
   * the provider, best effort). Between polls it waits the provider's hint, its interval or the
   * engine's, whichever applies, and wakes early on a job hint.
   */
  const follow = (
    provider: GenerationProvider,
    request: ProviderRequest,
    handle: ProviderHandle,
    deadline: number | undefined
  ): Effect.Effect<Generation, never, Scope.Scope> =>
    Effect.gen(function*() {
      const hints = yield* hintsFor(request.job)
      while (true) {
        if (deadline !== undefined && (yield* Clock.currentTimeMillis) >= deadline) {
          yield* retrying(provider.cancel(handle, request), true).pipe(
            Effect.catchAll((error) => Effect.logWarning("the provider did not take the cancel", error.message))
          )
          return generationFailed(
            `The generation did not finish within ${request.version.provider?.timeoutSeconds} seconds; it was cancelled and its cost refunded`
          )
        }
        yield* Queue.takeAll(hints)
        const polled = yield* Effect.either(retrying(provider.poll(handle, request), true))
        if (polled._tag === "Left") return generationFailed(polled.left.message)
        const status = polled.right
        if (status._tag !== "Running") return ended(status)
        const now = yield* Clock.currentTimeMillis
        const waitMs = Math.min(
          status.pollAfterMs ?? provider.pollIntervalMs ?? config.providerPollIntervalMs,
          deadline === undefined ? Infinity : Math.max(0, deadline - now)
        )
        yield* Effect.raceFirst(Effect.sleep(Duration.millis(Math.max(0, waitMs))), Queue.take(hints))
      }
    })

  /**
   * Runs the job's generation through `provider`, resuming a stored handle; fails only when the
   * lease was lost. A start the provider provably did not take is asked again: after a transient
   * refusal at most `providerRetry.maxRetries` times in a row, through an outage (isOutage) with
   * the same backoff until the version's deadline, and then the job fails with
   * PROVIDER_UNAVAILABLE. Meanwhile the job stays processing under this worker's lease with no
   * start recorded (phase null), so a worker that takes it over after a crash starts it afresh.
   */
  const generate = (
    job: Job,
    workerId: string,
    provider: GenerationProvider,
    request: ProviderRequest
  ): Effect.Effect<Generation, Superseded, Scope.Scope> =>
    Effect.gen(function*() {
      const timeoutSeconds = request.version.provider?.timeoutSeconds
      const pickedUpAt = job.startedAt ?? (yield* Clock.currentTimeMillis)
      const deadline = timeoutSeconds === undefined ? undefined : pickedUpAt + timeoutSeconds * 1000
      const outageSeconds = timeoutSeconds ?? DEFAULT_OUTAGE_WAIT_SECONDS
      let state: ProviderState = { phase: job.providerPhase, handle: job.providerHandle, starts: job.providerStarts }
      const save = (next: ProviderState) =>
        Effect.tap(storeWrite(repo.saveProviderState(job.id, workerId, next)), () => (state = next))
      const followStarted = (handle: ProviderHandle) =>
        Effect.zipRight(save({ ...state, phase: "started", handle }), follow(provider, request, handle, deadline))

      /** The start's outcome is unknown: only a generation the provider can point to is followed. */
      const recoverOrFail = Effect.gen(function*() {
        if (provider.recover === undefined) return unconfirmedStart
        const found = yield* Effect.either(retrying(provider.recover(request), true))
        if (found._tag === "Left") {
          yield* Effect.logWarning("the provider could not say whether it started the job", { jobId: job.id }, found.left.message)
          return unconfirmedStart
        }
        return Option.isSome(found.right) ? yield* followStarted(found.right.value) : unconfirmedStart
      })

      if (state.handle !== null) return yield* follow(provider, request, state.handle, deadline)
      // The first pickup's claim wrote `starting` for this run; any other `starting` is a lost run's.
      if (state.phase === "starting" && !startMarkedByClaim(job)) return yield* recoverOrFail

      // `starting` is committed before each call (the first pickup's claim did it for the first);
      // a start that provably took nothing clears it, so the next call is a start of its own.
      const startOnce = Effect.gen(function*() {
        if (state.phase !== "starting") yield* save({ phase: "starting", handle: null, starts: state.starts + 1 })
        return yield* Effect.tapError(provider.start(request), (error) =>
          nothingStarted(error) ? save({ phase: null, handle: null, starts: state.starts }) : Effect.void)
      })
      const isProviderError = (error: ProviderError | Superseded): error is ProviderError => error._tag !== "Superseded"
      const outcome = yield* startOnce.pipe(
        Effect.retry({
          schedule: deadline === undefined ? transientRetries : transientRetries.pipe(until(deadline)),
          while: (error) => error._tag === "ProviderRejected" && error.retryable && !isOutage(error)
        }),
        Effect.retry({
          schedule: backoff(config.providerRetry, retryAfterOf).pipe(until(pickedUpAt + outageSeconds * 1000)),
          while: (error) => isProviderError(error) && isOutage(error)
        }),
        Effect.tapError((error) =>
          isProviderError(error) && isOutage(error)
            ? Effect.logWarning("the provider stayed unavailable until the job's deadline", { jobId: job.id }, error.message)
            : Effect.void
        ),
        Effect.either
      )
      if (outcome._tag === "Right") {
        return outcome.right._tag === "Started" ? yield* followStarted(outcome.right.handle) : ended(outcome.right.status)
      }
      const error = outcome.left
      if (!isProviderError(error)) return yield* Effect.fail(error)
      if (isOutage(error)) return providerUnavailable(outageSeconds, error.message)
      // No answer to a request that may have arrived: the provider may have started.
      if (!nothingStarted(error)) return yield* recoverOrFail
      return generationFailed(error.message)
    })

  return { generate } as const
})
