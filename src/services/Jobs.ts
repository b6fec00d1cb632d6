import { Clock, Context, Effect, Layer, Option } from "effect"
import { canonicalJson, sha256Hex } from "../domain/canonicalJson.js"
import { engineError, type EngineError, STORE_RETRY_AFTER_SECONDS, type StoreError } from "../domain/errors.js"
import { type JobId, newJobId, type RequestId } from "../domain/ids.js"
import { type Job, JobStatus as JobStatusSchema } from "../domain/job.js"
import { type CostEstimate, estimateCost, isExactCost } from "../domain/pricing.js"
import { JobQueue } from "../ports/JobQueue.js"
import { JobRepo, type SubmitCommand, type SubmitOutcome } from "../ports/JobRepo.js"
import { JobSignal } from "../ports/JobSignal.js"
import { type Caller, requireScope } from "./Auth.js"
import { Catalog, type ResolvedModel } from "./Catalog.js"
import { EngineConfig } from "./EngineConfig.js"
import { LocalWorkers } from "./LocalWorkers.js"
import { readPageRequest, toPage } from "./paging.js"

export interface SubmitRequest {
  readonly model: string
  readonly version?: string | undefined
  readonly input: Record<string, unknown>
  readonly webhookUrl?: string | undefined
}

export interface SubmitResult {
  /** The job as admitted: pending, as the spec answers, even when a local worker took it at once. */
  readonly job: Job
  /** The version is deprecated: still served, to be moved off. */
  readonly deprecated: boolean
  /** When the version goes away (its catalog `sunsetAt`), if it has one. */
  readonly sunsetAt: string | undefined
  /** The answer repeats the first submit of this Idempotency-Key. */
  readonly replayed: boolean
}

export interface ListRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly status?: string | undefined
  readonly modelId?: string | undefined
}

export interface JobPage {
  readonly jobs: ReadonlyArray<Job>
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

const MAX_IDEMPOTENCY_KEY_LENGTH = 255

/** Longer URLs are refused: receivers and proxies commonly stop at 2,048 characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2_048

const requireModel = (model: string): Effect.Effect<void, EngineError> =>
  model.trim() === ""
    ? Effect.fail(engineError("VALIDATION_ERROR", "model is required: the model's slug", { field: "model" }))
    : Effect.void

const checkWebhookUrl = (url: string | undefined): Effect.Effect<void, EngineError> => {
  if (url === undefined) return Effect.void
  const invalid = (reason: string) =>
    Effect.fail(engineError("INVALID_INPUT", `webhookUrl ${reason}`, { field: "webhookUrl" }))
  if (url.length > MAX_WEBHOOK_URL_LENGTH) return invalid(`must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`)
  if (!URL.canParse(url)) return invalid("is not a valid URL")
  const parsed = new URL(url)
  if (parsed.protocol !== "https:") return invalid("must use the https:// scheme")
  if (parsed.username !== "" || parsed.password !== "") return invalid("must not carry credentials")
  return Effect.void
}

/** The budgets a caller's submits are held to: the key's, then its account's. */
const budgetsOf = ({ account, key }: Caller): NonNullable<SubmitCommand["budgets"]> => [
  ...(key.budget == null ? [] : [{ scope: "key" as const, budget: key.budget }]),
  ...(account.budget == null ? [] : [{ scope: "account" as const, budget: account.budget }])
]

export const make = Effect.gen(function*() {
  const repo = yield* JobRepo
  const catalog = yield* Catalog
  const signal = yield* JobSignal
  const config = yield* EngineConfig
  const localWorkers = yield* LocalWorkers
  const queue = yield* Effect.serviceOption(JobQueue)

  /**
   * Queues a stored job: wakes this store's claimers, and publishes it to the broker when there
   * is one. A publish that fails leaves the job stored and charged: the queue relay publishes it
   * once it has waited `queueRelayGraceMs`, so the submit still succeeds.
   */
  const enqueue = (job: Job) =>
    Effect.zipRight(
      signal.notify,
      Option.isNone(queue) ? Effect.void : queue.value.publish([job.id]).pipe(
        Effect.catchAll((error) =>
          Effect.logWarning("a submitted job could not be published to the queue; the relay publishes it later", { jobId: job.id }, error.message)
        )
      )
    )

  /**
   * The submit, offered to an idle worker of this process: one is reserved first, the store
   * writes the job as that worker's claim when nothing older is runnable, and the worker runs it
   * at once; otherwise the worker is given back. Uninterruptible, so neither a reserved worker
   * nor a written claim is left behind.
   */
  const submitToRepo = (command: SubmitCommand) =>
    Effect.uninterruptible(Effect.gen(function*() {
      const slot = yield* localWorkers.reserve(command.job)
      const released = Option.isSome(slot) ? slot.value.release : Effect.void
      const handOff = Option.isSome(slot) ? slot.value.lease : undefined
      const { found, outcome } = yield* repo.submit({ ...command, handOff }).pipe(
        Effect.map((outcome) => ({ outcome, found: false })),
        Effect.catchTag("StoreError", (error) => Effect.map(confirmStored(command.job, error), (outcome) => ({ outcome, found: true }))),
        Effect.onError(() => released)
      )
      // A job found after a lost answer is never run here: another fiber of this process may
      // hold it under the same owner. Handed off, it waits out its lease and is taken over.
      const taken = !found && outcome._tag === "Created" && outcome.job.status === "processing"
      if (Option.isSome(slot)) yield* (taken ? slot.value.run(outcome.job) : released)
      return { outcome, taken, found }
    }))

  /**
   * The store failed the submit, but a failure can come after the commit (the connection lost
   * with the commit's answer on its way): the job is looked up by its id before the client is
   * told anything. Stored, it was admitted and charged, and is answered as created; absent,
   * nothing was charged and the store's failure stands; when the store cannot even say, the
   * answer names the job's id so the client can look before it retries.
   */
  const confirmStored = (job: Job, failure: StoreError): Effect.Effect<SubmitOutcome, EngineError | StoreError> =>
    repo.get(job.id).pipe(
      Effect.catchTag("StoreError", (lookup) =>
        Effect.logError("submit could not be stored, nor its job looked up", { jobId: job.id }, failure, lookup).pipe(
          Effect.zipRight(Effect.fail(engineError(
            "PUBSUB_PUBLISH_FAILED",
            "The store failed while queuing the job and could not say whether it was queued: GET the job by its jobId before retrying, or retry with the same Idempotency-Key",
            { jobId: job.id },
            STORE_RETRY_AFTER_SECONDS
          )))
        )),
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(failure),
        onSome: (stored) =>
          Effect.as(
            Effect.logWarning("submit's store answer was lost after its commit; the job was found stored", { jobId: job.id }),
            { _tag: "Created", job: stored } satisfies SubmitOutcome
          )
      }))
    )

  /** The price of this input; one that no balance could hold (or not a number at all) is refused. */
  const priced = (
    caller: Caller,
    resolved: ResolvedModel,
    input: Readonly<Record<string, unknown>>
  ): Effect.Effect<CostEstimate, EngineError> => {
    const estimate = estimateCost(resolved.version.pricing, caller.account.discounts, resolved.model.slug, config.creditMicroCents, input)
    return isExactCost(estimate)
      ? Effect.succeed(estimate)
      : Effect.fail(engineError("INVALID_INPUT", "The input prices the job beyond the largest amount an account can hold"))
  }

  /**
   * The model and version a submit or estimate names, and the price of its input, checked as
   * submit checks it. Only an estimate may leave the input out (the spec makes it optional
   * there): it is then priced from the components' defaults, with nothing to validate.
   */
  const quote = (
    caller: Caller,
    request: { readonly model: string; readonly version?: string | undefined },
    input: Readonly<Record<string, unknown>> | undefined
  ) =>
    Effect.gen(function*() {
      yield* requireModel(request.model)
      const resolved = yield* catalog.resolve(caller.account, request.model, request.version)
      if (input !== undefined) yield* catalog.validateInput(resolved, input)
      return { resolved, cost: yield* priced(caller, resolved, input ?? {}) }
    })

  const estimate = (
    caller: Caller,
    request: {
      readonly model: string
      readonly version?: string | undefined
      readonly input?: Readonly<Record<string, unknown>> | undefined
    }
  ): Effect.Effect<
    { readonly estimate: CostEstimate; readonly deprecated: boolean; readonly sunsetAt: string | undefined },
    EngineError | StoreError
  > =>
    Effect.gen(function*() {
      yield* requireScope(caller, "check_status")
      // The same checks as submit, so an estimate never prices what submit would refuse.
      const { cost, resolved } = yield* quote(caller, request, request.input)
      return { estimate: cost, deprecated: resolved.version.status === "deprecated", sunsetAt: resolved.version.sunsetAt }
    })

  const submit = (
    caller: Caller,
    request: SubmitRequest,
    requestId: RequestId,
    idempotencyKey?: string | undefined
  ): Effect.Effect<SubmitResult, EngineError | StoreError> =>
    Effect.gen(function*() {
      yield* requireScope(caller, "submit_job")
      if (idempotencyKey !== undefined && (idempotencyKey.length === 0 || idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH)) {
        return yield* Effect.fail(
          engineError("VALIDATION_ERROR", `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`)
        )
      }
      yield* checkWebhookUrl(request.webhookUrl)
      const { cost, resolved } = yield* quote(caller, request, request.input)
      const now = yield* Clock.currentTimeMillis
      const job: Job = {
        id: newJobId(now),
        accountId: caller.account.id,
        apiKeyId: caller.key.id,
        requestId,
        model: resolved.model.slug,
        version: resolved.version.versionId,
        input: request.input,
        webhookUrl: request.webhookUrl ?? null,
        status: "pending",
        costMicroCents: cost.estimatedCostMicroCents,
        error: null,
        outputs: null,
        createdAt: now,
        estimatedCompletionAt: now + Math.round(resolved.version.estimatedSeconds * 1000),
        startedAt: null,
        completedAt: null,
        attempts: 0,
        leaseOwner: null,
        leaseExpiresAt: null,
        providerPhase: null,
        providerHandle: null,
        providerStarts: 0,
        providerRoute: null
      }
      const { found, outcome, taken } = yield* submitToRepo({
        job,
        maxConcurrentJobs: caller.account.maxConcurrentJobs,
        rateLimits: resolved.version.rateLimits,
        budgets: budgetsOf(caller),
        ...(idempotencyKey === undefined ? {} : {
          idempotency: {
            key: idempotencyKey,
            requestHash: sha256Hex(canonicalJson({ ...request, model: request.model, version: request.version })),
            notBefore: now - config.idempotencyWindowMs
          }
        })
      })
      if (outcome._tag === "Created" && !taken) yield* enqueue(job)
      return {
        // As admitted: pending, whether a local worker or another process took it by now.
        job: taken || found ? job : outcome.job,
        deprecated: resolved.version.status === "deprecated",
        sunsetAt: resolved.version.sunsetAt,
        replayed: outcome._tag === "Replayed"
      }
    }).pipe(
      // Whether the catalog read or the commit failed, nothing was charged and a retry is safe.
      Effect.catchTag("StoreError", (e) =>
        Effect.logError("submit could not be stored", e).pipe(
          Effect.zipRight(Effect.fail(engineError(
            "PUBSUB_PUBLISH_FAILED",
            "The job could not be queued; nothing was charged, retry",
            {},
            STORE_RETRY_AFTER_SECONDS
          )))
        ))
    )

  const ownJob = (caller: Caller, id: string): Effect.Effect<Job, EngineError | StoreError> =>
    Effect.gen(function*() {
      const job = yield* repo.get(id as JobId)
      if (Option.isNone(job)) return yield* Effect.fail(engineError("JOB_NOT_FOUND", `No job "${id}"`, { jobId: id }))
      if (job.value.accountId !== caller.account.id) {
        return yield* Effect.fail(
          engineError("UNAUTHORIZED_ACCESS", "This API key has no access to the job", { jobId: id })
        )
      }
      return job.value
    })

  const get = (caller: Caller, id: string) =>
    requireScope(caller, "check_status").pipe(Effect.zipRight(ownJob(caller, id)))

  const list = (caller: Caller, request: ListRequest): Effect.Effect<JobPage, EngineError | StoreError> =>
    Effect.gen(function*() {
      yield* requireScope(caller, "check_status")
      const { after, limit, status } = yield* readPageRequest(request, JobStatusSchema.literals)
      const rows = yield* repo.list({
        accountId: caller.account.id,
        limit,
        ...(status === undefined ? {} : { status }),
        ...(request.modelId === undefined ? {} : { model: request.modelId }),
        ...(after === undefined ? {} : { after })
      })
      const page = toPage(rows, limit)
      return { jobs: page.items, hasMore: page.hasMore, nextCursor: page.nextCursor }
    })

  const cancel = (caller: Caller, id: string) =>
    Effect.gen(function*() {
      yield* requireScope(caller, "submit_job")
      return yield* repo.cancel(id as JobId, caller.account.id, yield* Clock.currentTimeMillis)
    })

  return { estimate, submit, get, list, cancel } as const
})

export class Jobs extends Context.Tag("genjobs/Jobs")<Jobs, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Jobs, make)
}
