import { Clock, Effect } from "effect"
import { canonicalJson, sha256Hex } from "../../domain/canonicalJson.js"
import type { OperationNotAllowed } from "../../domain/accessRefusals.js"
import type { InvalidInput } from "../../domain/admission.js"
import type { ModelAccessDenied, ModelNotFound } from "../../domain/catalog.js"
import { PubsubPublishFailed, retryLater, storeBusyOf, type ValidationError } from "../../domain/errors.js"
import { newJobId, type RequestId } from "../../domain/ids.js"
import { fairWeightOf } from "../../domain/fairShare.js"
import type { Job } from "../../domain/job.js"
import type { ResolvedModel } from "../Catalog.js"
import { type Caller, requireScope } from "../Auth.js"
import { budgetsOf, checkIdempotencyKey, checkWebhookUrl } from "./checks.js"
import type { SubmitRefusal } from "../../ports/JobRepo.js"
import type { JobsDeps } from "./deps.js"
import { quote } from "./quote.js"
import { enqueue, storeSubmit } from "./storeSubmit.js"

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

/** The job a submit admits, pending, before the store has seen it. */
const newJob = (
  caller: Caller,
  request: SubmitRequest,
  webhookUrl: string | undefined,
  requestId: RequestId,
  resolved: ResolvedModel,
  costMicroCents: number,
  now: number
): Job => ({
  id: newJobId(now),
  accountId: caller.account.id,
  apiKeyId: caller.key.id,
  requestId,
  model: resolved.model.slug,
  version: resolved.version.versionId,
  input: request.input,
  webhookUrl: webhookUrl ?? null,
  status: "pending",
  costMicroCents,
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
  providerRoute: null,
  // The store assigns the job's place in the fair order as it inserts it.
  fairKey: 0
})

/** Checks, prices, charges and queues a job; a repeated Idempotency-Key answers the first submit again. */
export const submit = (deps: JobsDeps) =>
(
  caller: Caller,
  request: SubmitRequest,
  requestId: RequestId,
  idempotencyKey?: string | undefined
): Effect.Effect<
  SubmitResult,
  OperationNotAllowed | ValidationError | InvalidInput | ModelNotFound | ModelAccessDenied | SubmitRefusal | PubsubPublishFailed
> =>
  Effect.gen(function*() {
    yield* requireScope(caller, "submit_job")
    yield* checkIdempotencyKey(idempotencyKey)
    const webhookUrl = yield* checkWebhookUrl(request.webhookUrl)
    const { cost, resolved } = yield* quote(deps, caller, request, request.input)
    const now = yield* Clock.currentTimeMillis
    const admitted = newJob(caller, request, webhookUrl, requestId, resolved, cost.estimatedCostMicroCents, now)
    // The end it answers and keeps counts the queue ahead: a replay answers the same.
    const job = { ...admitted, estimatedCompletionAt: deps.estimateAtSubmit(admitted, now) }
    const { found, outcome, taken } = yield* storeSubmit(deps, {
      job,
      maxConcurrentJobs: caller.account.maxConcurrentJobs,
      rateLimits: resolved.version.rateLimits,
      budgets: budgetsOf(caller),
      ...(idempotencyKey === undefined ? {} : {
        idempotency: {
          key: idempotencyKey,
          requestHash: sha256Hex(canonicalJson({ ...request, model: request.model, version: request.version })),
          notBefore: now - deps.config.idempotencyWindowMs
        }
      })
    })
    if (outcome._tag === "Created" && !taken) yield* enqueue(deps, job, fairWeightOf(caller.account), outcome.claimersWoken === true)
    return {
      // As admitted: pending, whether a local worker or another process took it by now.
      job: taken || found ? job : outcome.job,
      deprecated: resolved.version.status === "deprecated",
      sunsetAt: resolved.version.sunsetAt,
      replayed: outcome._tag === "Replayed"
    }
  }).pipe(
    // Whether the catalog read or the commit failed, nothing was charged and a retry is safe. A
    // shed request is the answer to a burst, counted in its metric: logging each would add to it.
    Effect.catchTag("StoreError", (e) =>
      Effect.andThen(
        storeBusyOf(e) === undefined ? Effect.logError("submit could not be stored", e) : Effect.void,
        Effect.fail(retryLater(PubsubPublishFailed, e))
      ))
  )
