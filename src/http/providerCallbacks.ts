import { Effect, Option, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { routesOf } from "../domain/catalog.js"
import { Unauthorized } from "../domain/accessRefusals.js"
import { NotFound, ValidationError } from "../domain/errors.js"
import { JobNotFound } from "../domain/job.js"
import type { RefusalConstructor } from "../domain/refusal.js"
import { JobId } from "../domain/ids.js"
import type { Job } from "../domain/job.js"
import { JobEvents } from "../ports/JobEvents.js"
import { JobRepo } from "../ports/JobRepo.js"
import type { Providers } from "../ports/Provider.js"
import { Catalog } from "../services/Catalog.js"
import { CurrentRequestId } from "./requestContext.js"

/** The route providers call back on; outside the HttpApi since signatures need the raw body. */
export const PROVIDER_CALLBACK_ROUTE = "/v1/providers/:providerId/callbacks/:jobId"

/** The path (after PUBLIC_URL) of a job's callbacks from its provider. */
export const providerCallbackPath = (providerId: string, jobId: string): string =>
  `/v1/providers/${encodeURIComponent(providerId)}/callbacks/${encodeURIComponent(jobId)}`

/** The provider handle the job stored when its generation started; none before the start committed. */
const storedHandleId = (job: Job): string | undefined => job.providerHandle?.id

const refuse = (refusal: RefusalConstructor, message: string) => Effect.fail(new refusal({ message }))

/** The job of a callback's path, when it exists and runs (or may run) at that provider. */
const jobAt = (providerId: string, rawJobId: string | undefined) =>
  Effect.gen(function*() {
    const jobId = Schema.decodeUnknownOption(JobId)(rawJobId)
    if (Option.isNone(jobId)) return undefined
    const job = yield* Effect.flatMap(JobRepo, (repo) => repo.get(jobId.value))
    if (Option.isNone(job)) return undefined
    const resolved = yield* Effect.flatMap(Catalog, (catalog) => catalog.forJob(job.value.model, job.value.version))
    if (resolved === undefined) return undefined
    // A started job takes callbacks from the route it started on; before that, from any of its routes.
    const route = job.value.providerHandle?.route
    const runsThere = route === undefined
      ? routesOf(resolved.model, resolved.version).some((r) => r.providerId === providerId)
      : route.providerId === providerId
    return runsThere ? job.value : undefined
  })

/**
 * POST /v1/providers/{providerId}/callbacks/{jobId}: a provider says a generation changed. The
 * callback is verified as the provider documents (over the raw body), with the credential the
 * job started with where the provider signs per credential, before anything about the job is
 * answered, so an unsigned caller learns nothing of which jobs exist. A verified callback
 * about the job's own generation is a hint: the worker following the job polls the provider at
 * once, and the poll's answer (never the callback's body) decides the job. So the answer is
 * quick, and a callback lost or sent twice changes nothing; polling stays the backstop.
 */
export const receiveProviderCallback = (providers: Option.Option<Providers["Service"]>) =>
  Effect.gen(function*() {
    const params = yield* HttpRouter.params
    const providerId = params["providerId"] ?? ""
    const verify = Option.flatMap(providers, (p) => p.forProvider(providerId)).pipe(
      Option.flatMap((provider) => Option.fromNullishOr(provider.verifyCallback))
    )
    if (Option.isNone(verify)) return yield* refuse(NotFound, `No provider "${providerId}" takes callbacks here`)
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* request.arrayBuffer.pipe(
      Effect.catch(() => refuse(ValidationError, "The callback body could not be read to its end"))
    )
    // Looked up first for the credential its start recorded, but refused only once the callback
    // is verified: an unknown job is checked against every secret, and fails as a forgery does.
    const job = yield* jobAt(providerId, params["jobId"])
    const credentialId = job?.providerRoute?.credentialId ?? job?.providerHandle?.route?.credentialId
    const callback = yield* verify.value({ headers: request.headers, body: new Uint8Array(body), ...(credentialId === undefined ? {} : { credentialId }) }).pipe(
      Effect.tapError((rejected) => Effect.logWarning("provider callback refused", providerId, rejected.message)),
      Effect.catchTag("CallbackRejected", (rejected) => refuse(Unauthorized, rejected.message))
    )
    if (job === undefined) return yield* refuse(JobNotFound, `No job "${params["jobId"] ?? ""}" runs at the provider "${providerId}"`)
    const stored = storedHandleId(job)
    if (stored !== undefined && stored !== callback.handleId) {
      return yield* refuse(JobNotFound, `The job "${job.id}" follows another generation than "${callback.handleId}"`)
    }
    yield* (yield* JobEvents).publish([job.id])
    return yield* HttpServerResponse.json({ success: true, requestId: yield* CurrentRequestId })
  })
