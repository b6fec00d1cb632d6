import { Clock, Data, Duration, Effect, Option, Schedule } from "effect"
import { type CatalogModel, type EffectiveRoute, type ModelVersion, routesOf } from "../domain/catalog.js"
import type { StoreError } from "../domain/errors.js"
import { failureOf } from "../domain/failureTaxonomy.js"
import { type Job, startMarkedByClaim } from "../domain/job.js"
import type { ProviderHandle, ProviderRouteRef, ProviderState } from "../domain/providerHandle.js"
import { routeOrder } from "../domain/providerRoutes.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"
import {
  countsAgainstHealth,
  factOfError,
  type GenerationProvider,
  isOutage,
  movesToNextRoute,
  type ProviderError,
  type ProviderRequest,
  Providers,
  type StartOutcome,
  ProviderUnreachable
} from "../ports/Provider.js"
import { backoff } from "./backoffSchedule.js"
import { EngineConfig } from "./EngineConfig.js"
import type { Lease } from "./leaseKeeper.js"
import { DEFAULT_CREDENTIAL, ProviderHealth } from "./ProviderHealth.js"
import { callbackUrlOf, providerRequestOf } from "./providerRequest.js"
import { chooseTargets, type Registered, type Target } from "./startTargets.js"
import { ended, type Generation, generationFailed, Superseded, type Watching, watching, type WatchOutcome } from "./watch/generation.js"
import { makeProviderReports } from "./watch/providerReports.js"
import { makeWatcher, type Watcher } from "./watch/watcher.js"
import { afterFailure, retryOnFailure } from "./worker/retryOnFailure.js"

export { type Generation, Superseded, type Watching, type WatchOutcome } from "./watch/generation.js"

/**
 * What one job's run holds while it runs: its lease, and the generations it counts in flight
 * (ProviderHealth.hold), released all in one go when the run ends; the watch list its started
 * generation waits on, and where its end goes from there (the run's second half).
 */
export interface JobRunBook {
  readonly lease: Lease
  readonly holds: Array<() => void>
  readonly watcher: Watcher
  /** Called once, by the watch list, with the watched generation's end or the lease's loss. */
  readonly ended: (outcome: WatchOutcome) => void
}

/**
 * A pass over the routes ended without a start: the last route's error, and the start it was, when one was sent.
 * A Data error, not a Schema one: it carries the provider's calls, which no schema describes, and never leaves the worker.
 */
class StartFailed extends Data.TaggedError("StartFailed")<{
  readonly error: ProviderError
  readonly attempt: {
    readonly ref: ProviderRouteRef
    readonly provider: GenerationProvider
    readonly start: GenerationProvider["start"]
    readonly request: ProviderRequest
  }
}> {}

/** The job cannot run here: its route or its provider is gone. */
const internalFailure = (message: string): Generation => ({
  _tag: "Failed",
  error: failureOf("INTERNAL_ERROR", message, { _tag: "Engine", reason: "notRunnable" })
})

const UNCONFIRMED_MESSAGE = "The provider start could not be confirmed; the job was not started again and its cost was refunded"

/** A lost run's start nobody can confirm: the engine's failure. */
const unconfirmedStart: Generation = {
  _tag: "Failed",
  error: failureOf("INTERNAL_ERROR", UNCONFIRMED_MESSAGE, { _tag: "Engine", reason: "startUnconfirmed" })
}

/** A start that got no answer (`error`), which the provider could not point to afterwards: classified by that answer's absence. */
const unansweredStart = (error: ProviderError): Generation => ({
  _tag: "Failed",
  error: failureOf("INTERNAL_ERROR", UNCONFIRMED_MESSAGE, factOfError(error))
})

const providerUnavailable = (waitedSeconds: number, message: string): Generation => ({
  _tag: "Failed",
  error: failureOf(
    "PROVIDER_UNAVAILABLE",
    `The provider could not take the job within ${waitedSeconds} seconds (${message}); nothing was started and its cost was refunded`,
    { _tag: "Outage" }
  )
})

/** How long a start waits out a provider outage when the version sets no `provider.timeoutSeconds`. */
const DEFAULT_OUTAGE_WAIT_SECONDS = 60 * 60

/** Stops a schedule at `deadline` (epoch ms): no wait runs past it, and none starts after it. */
const until = (deadline: number) => <Out, In, E, R>(schedule: Schedule.Schedule<Out, In, E, R>) =>
  schedule.pipe(
    Schedule.while(() => Effect.map(Clock.currentTimeMillis, (now) => now < deadline)),
    Schedule.modifyDelay(({ duration }) =>
      Effect.map(Clock.currentTimeMillis, (now) => Duration.min(duration, Duration.millis(Math.max(0, deadline - now)))))
  )

const retryAfterOf = (error: ProviderError | Superseded) => (error._tag === "ProviderRejected" ? error.retryAfterMs : undefined)

/** Provably nothing started: the provider refused, or never got the request. */
const nothingStarted = (error: ProviderError) => error._tag === "ProviderRejected" || error.notSent

/** The request reached the provider, or may have: its route ran the job's start. */
const wasSent = (error: ProviderError) => error._tag === "ProviderRejected" || !error.notSent

const isStartFailed = (error: StartFailed | Superseded): error is StartFailed => error._tag === "StartFailed"

const passRetryAfter = (error: StartFailed | Superseded) => (isStartFailed(error) ? retryAfterOf(error.error) : undefined)

/**
 * A job's generation at its provider, started at most once. The phase `starting` is committed
 * before `start` is called (by the first pickup's claim, or by the run for a later start) and
 * the handle right after it answers; a worker that finds a handle
 * polls it, one that finds `starting` without a handle asks `recover` or fails the job with a
 * refund, since the provider may have started. Only a start the provider refused, or one whose
 * request provably never reached it, is asked again. A generation with a handle waits on the
 * run's watch list (watch/watcher.ts), not on the run's fiber.
 */
export const makeProviderCalls = Effect.gen(function*() {
  const repo = yield* JobRepo
  const events = yield* JobEvents
  const config = yield* EngineConfig
  const health = yield* ProviderHealth
  const providers = yield* Providers
  // One batcher for the process's running generations: their progress and log lines go to the store together.
  const reports = yield* makeProviderReports

  /**
   * Retries a store write on StoreError with the shared backoff, for as long as the run holds
   * the job's lease; fails with Superseded when the lease was lost. A store fault never fails
   * the job: the run gives the job back as if superseded, and the claim after it resumes from
   * the stored state.
   */
  const storeWrite = (lease: Lease, write: Effect.Effect<boolean, StoreError>): Effect.Effect<void, Superseded> =>
    retryOnFailure(
      Effect.tapError(write, (error) => Effect.logWarning("a job's provider state could not be written; retrying", { jobId: lease.id }, error.message)),
      () => ({ schedule: backoff<StoreError>(config.storeRetry), while: () => !lease.lost })
    ).pipe(
      Effect.mapError(() => new Superseded()),
      Effect.flatMap((written) => (written ? Effect.void : Effect.fail(new Superseded())))
    )

  /** Transient errors in a row, retried after capped exponential backoff with full jitter, never sooner than Retry-After. */
  const transientSchedule = <E>(retryAfter: (error: E) => number | undefined) =>
    backoff(config.providerRetry, retryAfter).pipe(Schedule.upTo({ times: config.providerRetry.maxRetries }))
  const transientRetries = transientSchedule(retryAfterOf)

  /**
   * Runs a provider call, retrying its transient errors (a retryable rejection; no answer when
   * `unreachableIsTransient`) at most `providerRetry.maxRetries` times in a row.
   */
  const retrying = <A>(call: Effect.Effect<A, ProviderError>, unreachableIsTransient: boolean): Effect.Effect<A, ProviderError> =>
    retryOnFailure(call, () => ({
      schedule: transientRetries,
      while: (error: ProviderError) => (error._tag === "ProviderRejected" ? error.retryable : unreachableIsTransient)
    }))

  /** A call's error, counted towards the credential's circuit, or as a success when it does not count against it. */
  const countedError = (providerId: string, key: string, error: ProviderError): Effect.Effect<void> => {
    if (countsAgainstHealth(error)) return health.failed(providerId, key)
    health.succeeded(providerId, key)
    return Effect.void
  }

  /**
   * The provider as one credential calls it: each poll's, cancel's and recover's outcome counts
   * towards that credential's circuit. Its `start` is the provider's own: a start is counted by
   * its turn (startTurn), in the match it takes the answer with.
   */
  const watched = (provider: GenerationProvider, providerId: string, credentialId: string | undefined): GenerationProvider => {
    const key = credentialId ?? DEFAULT_CREDENTIAL
    // The circuit's bookkeeping is synchronous: a call that succeeds pays one step for it.
    const counted = <A>(call: Effect.Effect<A, ProviderError>) =>
      call.pipe(
        Effect.map((answer) => {
          health.succeeded(providerId, key)
          return answer
        }),
        Effect.tapError((error) => countedError(providerId, key, error))
      )
    return {
      ...provider,
      poll: (handle, request) => counted(provider.poll(handle, request)),
      cancel: (handle, request) => counted(provider.cancel(handle, request)),
      ...(provider.recover === undefined ? {} : { recover: (request: ProviderRequest) => counted(provider.recover!(request)) })
    }
  }

  /** Each provider as each of its credentials calls it, made once per provider object (a start would otherwise wrap its provider anew); weak, as a traced provider is a new object per lookup. */
  const watchedProviders = new WeakMap<GenerationProvider, Map<string | undefined, GenerationProvider>>()
  const watchedOf = (provider: GenerationProvider, providerId: string, credentialId: string | undefined) => {
    let byCredential = watchedProviders.get(provider)
    if (byCredential === undefined) watchedProviders.set(provider, byCredential = new Map())
    let calls = byCredential.get(credentialId)
    if (calls === undefined) byCredential.set(credentialId, calls = watched(provider, providerId, credentialId))
    return calls
  }

  /**
   * One start's target: a route, its provider as this credential calls it (its polls and
   * recovers counted: watched), the provider's own start, the request it is sent.
   */
  interface Attempt {
    readonly ref: ProviderRouteRef
    readonly provider: GenerationProvider
    readonly start: GenerationProvider["start"]
    readonly request: ProviderRequest
  }

  /** What the steps of one job's `generate` share. */
  interface JobRun {
    readonly book: JobRunBook
    readonly job: Job
    readonly model: CatalogModel
    readonly version: ModelVersion
    /** The version's routes in the catalog's order. */
    readonly routes: ReadonlyArray<EffectiveRoute>
    readonly pickedUpAt: number
    /** When the generation must have ended (epoch ms): the version's `provider.timeoutSeconds` after pickup. */
    readonly deadline: number | undefined
    /** How long a start waits out an outage of every route. */
    readonly outageSeconds: number
    /** The job's provider state as this run last wrote or found it (set by `save` only). */
    state: ProviderState
  }

  // A record with no closures of its own: a job's run allocates what it holds, nothing more.
  const runOf = (job: Job, book: JobRunBook, model: CatalogModel, version: ModelVersion, pickedUpAt: number): JobRun => {
    const timeoutSeconds = version.provider?.timeoutSeconds
    return {
      book,
      job,
      model,
      version,
      routes: routesOf(model, version),
      pickedUpAt,
      deadline: timeoutSeconds === undefined ? undefined : pickedUpAt + timeoutSeconds * 1000,
      outageSeconds: timeoutSeconds ?? DEFAULT_OUTAGE_WAIT_SECONDS,
      state: { phase: job.providerPhase, handle: job.providerHandle, starts: job.providerStarts }
    }
  }

  /** Writes the run's provider state under its lease, then keeps it as the run's; Superseded when the lease was lost. */
  const save = (run: JobRun, next: ProviderState): Effect.Effect<void, Superseded> =>
    Effect.map(storeWrite(run.book.lease, repo.saveProviderState(run.job.id, run.book.lease.workerId, next)), () => {
      run.state = next
    })

  const registeredOf = (route: EffectiveRoute): ReadonlyArray<Registered> => {
    const provider = providers.forProvider(route.providerId)
    return Option.isSome(provider) ? [{ route, provider: provider.value }] : []
  }

  const attemptOn = (run: JobRun, { provider, route }: Registered, credentialId: string | undefined): Attempt => {
    const callbackUrl = config.publicUrl !== undefined && provider.verifyCallback !== undefined
      ? callbackUrlOf(config.publicUrl, route.providerId, run.job.id)
      : undefined
    return {
      ref: { index: route.index, providerId: route.providerId, ...(credentialId === undefined ? {} : { credentialId }) },
      provider: watchedOf(provider, route.providerId, credentialId),
      start: provider.start,
      request: providerRequestOf(run.job, run.model, run.version, callbackUrl, route, credentialId)
    }
  }

  /** Counts the generation in flight on its credential until the run ends (the runner releases the run's holds); answers the release. */
  const holding = (run: JobRun, ref: ProviderRouteRef) => {
    const release = health.hold(ref.providerId, ref.credentialId ?? DEFAULT_CREDENTIAL)
    run.book.holds.push(release)
    return release
  }

  /**
   * Puts a started generation on its provider's watch list: the run's fiber is free from here,
   * and the generation's end comes back through the book's `ended`. Superseded when the lease
   * was lost already.
   */
  const watch = (run: JobRun, attempt: Attempt, handle: ProviderHandle): Effect.Effect<Watching, Superseded> =>
    Effect.suspend(() => {
      if (run.book.lease.lost) return Effect.fail(new Superseded())
      return Effect.as(
        run.book.watcher.watch({
          lease: run.book.lease,
          providerId: attempt.ref.providerId,
          provider: attempt.provider,
          request: attempt.request,
          handle,
          deadline: run.deadline,
          timeoutSeconds: run.version.provider?.timeoutSeconds,
          ended: run.book.ended
        }),
        watching
      )
    })

  /** Saves the handle with its route (the job's record of where it runs), then watches it. */
  const followStarted = (run: JobRun, attempt: Attempt, handle: ProviderHandle) =>
    Effect.andThen(
      save(run, { ...run.state, phase: "started", handle: { ...handle, route: attempt.ref }, route: attempt.ref }),
      watch(run, attempt, handle)
    )

  const followFound = (run: JobRun, candidate: Attempt, handle: ProviderHandle) =>
    Effect.suspend(() => {
      holding(run, candidate.ref)
      return followStarted(run, candidate, handle)
    })

  /** A stored handle is followed on the route and with the credential it was started with. */
  const resumeStored = Effect.fnUntraced(function*(run: JobRun, handle: ProviderHandle) {
    // A handle stored before routes existed carries none: it ran on the version's first route.
    const ref = handle.route ?? { index: 0, providerId: run.routes[0]!.providerId }
    const route = run.routes[ref.index]?.providerId === ref.providerId
      ? run.routes[ref.index]
      : run.routes.find((r) => r.providerId === ref.providerId)
    if (route === undefined) return internalFailure(`The job's route to "${ref.providerId}" is no longer in its version's routes`)
    const registered = registeredOf(route)[0]
    if (registered === undefined) return internalFailure(`No provider is registered for provider id "${ref.providerId}"`)
    holding(run, ref)
    const attempt = attemptOn(run, registered, ref.credentialId)
    return yield* watch(run, attempt, handle)
  })

  /**
   * What `candidates` know of the job's generation together: the first found, else
   * `NotStarted` only when every one searched a complete record (with the longest settling
   * time), else `Unknown` (no `recover`, an error, an incomplete search).
   */
  const recoverFrom = Effect.fnUntraced(function*(run: JobRun, candidates: ReadonlyArray<Attempt>) {
    let settledAfterMs = 0
    let complete = candidates.length > 0
    for (const candidate of candidates) {
      const recover = candidate.provider.recover
      if (recover === undefined) {
        complete = false
        continue
      }
      const found = yield* Effect.result(retrying(recover(candidate.request), true))
      if (found._tag === "Failure") {
        yield* Effect.logWarning("the provider could not say whether it started the job", { jobId: run.job.id }, found.failure.message)
        complete = false
      } else if (found.success._tag === "Found") {
        return { _tag: "Found", candidate, handle: found.success.handle } as const
      } else if (found.success._tag === "NotStarted") {
        settledAfterMs = Math.max(settledAfterMs, found.success.settledAfterMs)
      } else {
        complete = false
      }
    }
    return complete ? { _tag: "NotStarted", settledAfterMs } as const : { _tag: "Unknown" } as const
  })

  /** The start sent on `attempt` got no answer: only a generation the provider can point to is followed. */
  const recoverOrFail = (run: JobRun, attempt: Attempt, error: ProviderError) =>
    Effect.flatMap(recoverFrom(run, [attempt]), (recovered): Effect.Effect<Generation | Watching, Superseded> =>
      recovered._tag === "Found"
        ? followFound(run, recovered.candidate, recovered.handle)
        : Effect.as(health.unconfirmed(attempt.ref.providerId), { ...unansweredStart(error), route: attempt.ref }))

  /** A lost run's start went, if at all, to one of these routes, none of which could say: each is counted. */
  const lostRunUnconfirmed = (usable: ReadonlyArray<Registered>) =>
    Effect.as(
      Effect.forEach(new Set(usable.map(({ route }) => route.providerId)), health.unconfirmed, { discard: true }),
      unconfirmedStart
    )

  /** A start on each of the route's credentials, for a search of every place a lost start may have gone. */
  const everyCredential = (run: JobRun, registered: Registered): ReadonlyArray<Attempt> =>
    (registered.provider.credentials ?? [undefined]).map((credential) => attemptOn(run, registered, credential?.id))

  /**
   * A lost run's `starting` without a handle: its start may have reached any route. Only when
   * every route is registered and each says `NotStarted`, twice, is the job started afresh.
   * The lost run sent its start, if at all, before its lease ran out, so before this takeover;
   * the second search comes `settledAfterMs` later, when any such request shows for certain.
   */
  const recoverLostRun = Effect.fnUntraced(function*(
    run: JobRun,
    usable: ReadonlyArray<Registered>,
    complete: boolean
  ): Effect.fn.Return<Generation | Watching, Superseded> {
    const candidates = usable.flatMap((registered) => everyCredential(run, registered))
    const first = yield* recoverFrom(run, candidates)
    if (first._tag === "Found") return yield* followFound(run, first.candidate, first.handle)
    if (first._tag === "Unknown" || !complete) return yield* lostRunUnconfirmed(usable)
    yield* Effect.sleep(Duration.millis(first.settledAfterMs))
    const second = yield* recoverFrom(run, candidates)
    if (second._tag === "Found") return yield* followFound(run, second.candidate, second.handle)
    if (second._tag === "Unknown") return yield* lostRunUnconfirmed(usable)
    yield* Effect.logInfo("the provider holds nothing for the lost run's start; starting the job afresh", { jobId: run.job.id })
    yield* save(run, { phase: null, handle: null, starts: run.state.starts })
    return yield* startAfresh(run, usable)
  })

  // `starting` is committed before each call (the first pickup's claim did it for the first);
  // a start that provably took nothing clears it (startTurn), so the next call is a start of its own.
  // The provider's `start` is called only once `starting` is written (a provider may act in the call itself).
  const startOn = (run: JobRun, attempt: Attempt) =>
    run.state.phase === "starting"
      ? health.started(attempt.ref.providerId, attempt.start(attempt.request))
      : Effect.andThen(
        save(run, { phase: "starting", handle: null, starts: run.state.starts + 1 }),
        () => health.started(attempt.ref.providerId, attempt.start(attempt.request))
      )

  /** A start's answer: the generation followed on its watch list, or its end when it ended in the call (no handle to save: the route is recorded with the job's end). */
  const answered = (run: JobRun, attempt: Attempt, outcome: StartOutcome): Effect.Effect<Generation | Watching, Superseded> =>
    outcome._tag === "Started"
      ? followStarted(run, attempt, outcome.handle)
      : Effect.succeed({ ...ended(outcome.status), route: attempt.ref })

  /**
   * Route `i` of a pass's targets at `now` (the clock as this route's turn came), then the next
   * ones in turn, moving on only from a start that provably took nothing; `last` is the error
   * the pass ends with if no later route starts. The start's answer is taken in one match: the
   * credential's circuit counts it, and the generation is followed (or its end answered) from
   * there. A plain function over Effects, as the run's other per-job steps: a start builds no
   * generator.
   */
  const startTurn = (
    run: JobRun,
    targets: ReadonlyArray<Target>,
    i: number,
    now: number,
    last: StartFailed | undefined
  ): Effect.Effect<Generation | Watching, StartFailed | Superseded> => {
    const { credentialId, healthKey, registered, steered } = targets[i]!
    const providerId = registered.route.providerId
    const next = (failed: StartFailed): Effect.Effect<Generation | Watching, StartFailed | Superseded> =>
      i === targets.length - 1
        ? Effect.fail(failed)
        : Effect.andThen(health.fellBack(providerId), Effect.flatMap(Clock.currentTimeMillis, (later) => startTurn(run, targets, i + 1, later, failed)))
    // An open circuit past its pause lets one start through: taken here, when this route's turn comes.
    if (steered && !health.admit(providerId, healthKey, now)) {
      return next(
        last ?? new StartFailed({
          error: new ProviderUnreachable({ message: `${providerId} is busy probing its circuit`, notSent: true }),
          attempt: attemptOn(run, registered, credentialId)
        })
      )
    }
    const attempt = attemptOn(run, registered, credentialId)
    // Held from before the start is sent; a start that failed gives it back at once.
    const release = holding(run, attempt.ref)
    return Effect.matchEffect(startOn(run, attempt), {
      onSuccess: (outcome) => {
        health.succeeded(providerId, healthKey)
        return answered(run, attempt, outcome)
      },
      onFailure: (error) => {
        release()
        // Written before the call: the lease was lost, nothing was sent.
        if (error._tag === "Superseded") return Effect.fail(error)
        const failed = new StartFailed({ error, attempt })
        const after = movesToNextRoute(error) ? next(failed) : Effect.fail(failed)
        const cleared = nothingStarted(error) ? Effect.andThen(save(run, { phase: null, handle: null, starts: run.state.starts }), after) : after
        return Effect.andThen(countedError(providerId, healthKey, error), cleared)
      }
    })
  }

  /**
   * One pass over the routes in order at `now`, moving on only from a start that provably took
   * nothing; the first route's admission and the choice of credentials read the same clock.
   */
  const startPass = (run: JobRun, usable: ReadonlyArray<Registered>, now: number): Effect.Effect<Generation | Watching, StartFailed | Superseded> => {
    const { passedOver, targets } = chooseTargets(health, usable, now)
    if (targets.length === 0) return Effect.die(new Error("a pass over the routes found no credential to start on"))
    const pass = startTurn(run, targets, 0, now, undefined)
    return passedOver.length === 0
      ? pass
      : Effect.andThen(Effect.forEach(passedOver, ({ route }) => health.fellBack(route.providerId), { discard: true }), pass)
  }

  /** A pass that reads the clock in its first step: each retry's. */
  const startPassNow = (run: JobRun, usable: ReadonlyArray<Registered>) =>
    Effect.clockWith((clock) => startPass(run, usable, clock.currentTimeMillisUnsafe()))

  /**
   * The passes after a first that failed with `first`: after a transient refusal at most
   * `providerRetry.maxRetries` times in a row (within the deadline), through an outage with the
   * same backoff until the outage wait runs out.
   */
  const laterPasses = (run: JobRun, usable: ReadonlyArray<Registered>, first: StartFailed) =>
    afterFailure<Generation | Watching, StartFailed | Superseded, never>(first, startPassNow(run, usable)).pipe(
      (pass) =>
        retryOnFailure(pass, () => ({
          schedule: run.deadline === undefined
            ? transientSchedule(passRetryAfter)
            : transientSchedule(passRetryAfter).pipe(until(run.deadline)),
          while: (error: StartFailed | Superseded) =>
            isStartFailed(error) && error.error._tag === "ProviderRejected" && error.error.retryable && !isOutage(error.error)
        })),
      (passes) =>
        retryOnFailure(passes, () => ({
          schedule: backoff(config.providerRetry, passRetryAfter).pipe(until(run.pickedUpAt + run.outageSeconds * 1000)),
          while: (error: StartFailed | Superseded) => isStartFailed(error) && isOutage(error.error)
        })),
      Effect.tapError((error) =>
        isStartFailed(error) && isOutage(error.error)
          ? Effect.logWarning("every provider route stayed unavailable until the job's deadline", { jobId: run.job.id }, error.error.message)
          : Effect.void
      )
    )

  /** The job's end when no pass started it; a lost lease goes through. */
  const unstarted = (run: JobRun) => (failure: StartFailed | Superseded): Effect.Effect<Generation | Watching, Superseded> =>
    isStartFailed(failure) ? noStart(run, failure) : Effect.fail(failure)

  /**
   * Starts the job on its routes and follows the generation (a start that ended in its call is
   * its job's end): passes over the routes until one starts (laterPasses), the first at `now`
   * when the caller read the clock already. The retries are built only once the first pass
   * failed: a first pass that starts (nearly every one) pays one catch.
   */
  const startAfresh = (run: JobRun, usable: ReadonlyArray<Registered>, now?: number): Effect.Effect<Generation | Watching, Superseded> =>
    Effect.catch(
      now === undefined ? startPassNow(run, usable) : startPass(run, usable, now),
      (first) => (isStartFailed(first) ? Effect.catch(laterPasses(run, usable, first), unstarted(run)) : Effect.fail(first))
    )

  /** How the job ends when no pass started it: the route of the deciding start is recorded when that start was sent. */
  const noStart = (run: JobRun, { attempt, error }: StartFailed): Effect.Effect<Generation | Watching, Superseded> => {
    const sentOn = wasSent(error) ? { route: attempt.ref } : {}
    if (isOutage(error)) return Effect.succeed({ ...providerUnavailable(run.outageSeconds, error.message), ...sentOn })
    // No answer to a request that may have arrived: the provider may have started, on this route only.
    if (!nothingStarted(error)) return recoverOrFail(run, attempt, error)
    return Effect.succeed({ ...generationFailed(error.message, factOfError(error)), ...sentOn })
  }

  /**
   * Runs the job's generation on its version's routes, resuming a stored handle on the route
   * and credential it was started with; answers Watching once a started (or resumed) generation
   * joined the watch list, its end then coming through the book's `ended`; fails only when the
   * lease was lost. A start goes to the
   * first route (in routeOrder) whose provider is registered and has a credential whose circuit
   * is not open; a refusal that proves nothing started there (movesToNextRoute) moves it to the
   * next route, and a start whose outcome is unknown is never left. When every route refused,
   * the whole list is asked again: after a transient refusal at most `providerRetry.maxRetries`
   * times in a row, through an outage (isOutage) with the same backoff until the version's
   * deadline, and then the job fails with PROVIDER_UNAVAILABLE. Meanwhile the job stays
   * processing under this worker's lease with no start recorded (phase null), so a worker that
   * takes it over after a crash starts it afresh. The route a start was sent on is recorded on
   * the job: with its handle, or (a start that ended in its call, or was refused) with its end.
   */
  const generate = (job: Job, book: JobRunBook, model: CatalogModel, version: ModelVersion): Effect.Effect<Generation | Watching, Superseded> =>
    // One step reads the clock for the pickup of a job that has none (a claimed job's is its
    // claim's time, startedAt) and for the first pass's choice of credentials.
    Effect.clockWith((clock) => {
      const now = clock.currentTimeMillisUnsafe()
      return generateFor(runOf(job, book, model, version, job.startedAt ?? now), now)
    })

  /** `generate` for the run's record, made when the run reaches it, at `now`. */
  const generateFor = (run: JobRun, now: number): Effect.Effect<Generation | Watching, Superseded> => {
    const stored = run.state.handle
    if (stored !== null) return resumeStored(run, stored)
    const ordered = routeOrder(run.routes, run.job.id)
    const usable = ordered.flatMap(registeredOf)
    if (usable.length === 0) {
      return Effect.succeed(internalFailure(`No provider is registered for provider id ${ordered.map((r) => `"${r.providerId}"`).join(", ")}`))
    }
    // The first pickup's claim wrote `starting` for this run; any other `starting` is a lost run's, on any route.
    const started = run.state.phase === "starting" && !startMarkedByClaim(run.job)
      ? recoverLostRun(run, usable, usable.length === ordered.length)
      : startAfresh(run, usable, now)
    // Routes before the first registered one are passed over: each such start falls back.
    const passedOver = ordered.indexOf(usable[0]!.route)
    return passedOver === 0
      ? started
      : Effect.andThen(Effect.forEach(ordered.slice(0, passedOver), (route) => health.fellBack(route.providerId), { discard: true }), started)
  }

  /** A watch list for one started worker's (or one runOnce's) generations, its fibers in the current scope. */
  const newWatcher = makeWatcher({ config, events, retrying, reports })

  return { generate, newWatcher } as const
})
