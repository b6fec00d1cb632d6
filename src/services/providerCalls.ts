import { Clock, Data, Duration, Effect, Option, Queue, Random, type Scope } from "effect"
import { backoffDelayMs } from "../domain/backoff.js"
import type { StoreError } from "../domain/errors.js"
import { type Job, type JobError, startMarkedByClaim } from "../domain/job.js"
import type { ProviderHandle, ProviderState } from "../domain/providerHandle.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"
import type {
  GenerationProvider,
  ProviderError,
  ProviderOutput,
  ProviderRequest,
  ProviderStatus
} from "../ports/Provider.js"
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

const ended = (status: Exclude<ProviderStatus, { readonly _tag: "Running" }>): Generation =>
  status._tag === "Succeeded" ? status : generationFailed(status.message)

/**
 * A job's generation at its provider, started at most once. The phase `starting` is committed
 * before `start` is called (by the first pickup's claim, or by the run for a later start) and
 * the handle right after it answers; a worker that finds a handle
 * polls it, one that finds `starting` without a handle asks `recover` or fails the job with a
 * refund, since the provider may have started. Only a start the provider refused is asked again.
 */
export const makeProviderCalls = Effect.gen(function*() {
  const repo = yield* JobRepo
  const events = yield* JobEvents
  const config = yield* EngineConfig

  /** Retries a store write on StoreError (the race with the lease ends it); fails with Superseded when the lease was lost. */
  const storeWrite = (write: Effect.Effect<boolean, StoreError>): Effect.Effect<void, Superseded> =>
    Effect.gen(function*() {
      for (let attempt = 0;; attempt++) {
        const written = yield* Effect.either(write)
        if (written._tag === "Right") return written.right ? undefined : yield* Effect.fail(new Superseded())
        yield* Effect.logWarning("a job's provider state could not be written; retrying", written.left.message)
        yield* Effect.sleep(Duration.millis(backoffDelayMs(config.storeRetry, attempt, yield* Random.next)))
      }
    })

  /**
   * Runs a provider call, retrying its transient errors (a retryable rejection; no answer when
   * `unreachableIsTransient`) after capped exponential backoff with full jitter, never sooner
   * than the provider's Retry-After, at most `providerRetry.maxRetries` times in a row.
   */
  const retrying = <A>(call: Effect.Effect<A, ProviderError>, unreachableIsTransient: boolean): Effect.Effect<A, ProviderError> =>
    Effect.gen(function*() {
      for (let attempt = 0;; attempt++) {
        const result = yield* Effect.either(call)
        if (result._tag === "Right") return result.right
        const error = result.left
        const transient = error._tag === "ProviderRejected" ? error.retryable : unreachableIsTransient
        if (!transient || attempt >= config.providerRetry.maxRetries) return yield* Effect.fail(error)
        const retryAfterMs = error._tag === "ProviderRejected" ? error.retryAfterMs : undefined
        yield* Effect.sleep(Duration.millis(backoffDelayMs(config.providerRetry, attempt, yield* Random.next, retryAfterMs)))
      }
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

  /** Runs the job's generation through `provider`, resuming a stored handle; fails only when the lease was lost. */
  const generate = (
    job: Job,
    workerId: string,
    provider: GenerationProvider,
    request: ProviderRequest
  ): Effect.Effect<Generation, Superseded, Scope.Scope> =>
    Effect.gen(function*() {
      const timeoutSeconds = request.version.provider?.timeoutSeconds
      const deadline = timeoutSeconds === undefined ? undefined : (job.startedAt ?? (yield* Clock.currentTimeMillis)) + timeoutSeconds * 1000
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
      const marked = startMarkedByClaim(job)
      if (state.phase === "starting" && !marked) return yield* recoverOrFail
      for (let attempt = 0;; attempt++) {
        if (!(attempt === 0 && marked)) yield* save({ phase: "starting", handle: null, starts: state.starts + 1 })
        const outcome = yield* Effect.either(provider.start(request))
        if (outcome._tag === "Right") {
          return outcome.right._tag === "Started" ? yield* followStarted(outcome.right.handle) : ended(outcome.right.status)
        }
        const error = outcome.left
        if (error._tag === "ProviderUnreachable") return yield* recoverOrFail
        // Refused: nothing started, so starting again is safe.
        if (!error.retryable || attempt >= config.providerRetry.maxRetries) return generationFailed(error.message)
        if (deadline !== undefined && (yield* Clock.currentTimeMillis) >= deadline) return generationFailed(error.message)
        yield* save({ phase: null, handle: null, starts: state.starts })
        yield* Effect.sleep(Duration.millis(backoffDelayMs(config.providerRetry, attempt, yield* Random.next, error.retryAfterMs)))
      }
    })

  return { generate } as const
})
