import { Context, Effect, Layer, Option, Schema, type Stream } from "effect"
import type { ProviderHandle } from "../domain/providerHandle.js"
import type { CatalogModel, ModelVersion } from "../domain/catalog.js"
import type { FailureFact, ProviderFacts } from "../domain/failureTaxonomy.js"
import type { Job, OutputType } from "../domain/job.js"

export { ProviderHandle } from "../domain/providerHandle.js"

/** One job's generation, as a provider adapter sees it. */
export interface ProviderRequest {
  readonly job: Job
  readonly model: CatalogModel
  readonly version: ModelVersion
  /** The provider's model: the version's `provider.model`, else the model's slug. */
  readonly providerModel: string
  /** The job's input mapped onto the provider's input by the version's `provider.input`. */
  readonly input: Readonly<Record<string, unknown>>
  /**
   * The same for every attempt of the job: sent as an idempotency key, or as metadata that
   * `recover` searches by, where the provider allows either.
   */
  readonly idempotencyKey: string
  /** The engine's callback address for this job, when it has a public URL and the provider calls back. */
  readonly callbackUrl?: string
  /**
   * Which of the provider's `credentials` to call with: the one the generation was started
   * with, for every call about it. Absent: the provider's first (or only) credential. An id the
   * provider no longer has is refused (ProviderRejected, not retryable), never swapped.
   */
  readonly credentialId?: string
}

/** A credential a provider can call with, as the engine sees it: an id and a weight, never the secret. */
export interface ProviderCredential {
  readonly id: string
  /** Its share of new starts relative to the provider's other credentials (default 1). */
  readonly weight: number
}

/**
 * Where an output's bytes come from. The engine streams either into its BlobStore (never whole
 * in memory), checking the content type and the size cap of the output's type.
 */
export type OutputSource =
  | { readonly _tag: "Url"; readonly url: string; readonly headers?: Readonly<Record<string, string>> }
  | { readonly _tag: "Bytes"; readonly body: Stream.Stream<Uint8Array, ProviderError>; readonly contentType: string }

export interface ProviderOutput {
  readonly type: OutputType
  readonly source: OutputSource
  /** The content type to expect when the source does not say (a URL answering octet-stream). */
  readonly contentType?: string
  readonly thumbnail?: OutputSource
  readonly posterImage?: OutputSource
  readonly metadata?: Readonly<Record<string, unknown>>
}

export interface Running {
  readonly _tag: "Running"
  /** 0 to 100, when the provider tells; the job shows it as `providerProgress`, never moving backwards. */
  readonly progress?: number
  /**
   * The provider's whole log so far, line by line, when it reports one: every poll answers all
   * of it (as providers send it), and the engine keeps the lines past those it took before
   * (domain/providerLogs.ts: redacted, capped per job).
   */
  readonly logs?: ReadonlyArray<string>
  /** The provider's hint of when to ask again. */
  readonly pollAfterMs?: number
}
export interface Succeeded {
  readonly _tag: "Succeeded"
  readonly outputs: ReadonlyArray<ProviderOutput>
}
/**
 * The generation ended without a result (failed or cancelled at the provider): the job fails
 * with this message. The adapter passes on what the provider said of why (ProviderFacts: its
 * failure code, a content-policy flag); the engine decides the failure's type from that.
 */
export interface Failed extends ProviderFacts {
  readonly _tag: "Failed"
  readonly message: string
}

/** Where a started generation stands. */
export type ProviderStatus = Running | Succeeded | Failed

export type StartOutcome =
  /** Accepted: the engine commits the handle with the job, then polls it (or hears the callback). */
  | { readonly _tag: "Started"; readonly handle: ProviderHandle }
  /** Finished within the call, as a synchronous API does: nothing to keep. */
  | { readonly _tag: "Finished"; readonly status: Succeeded | Failed }

/**
 * What `recover` learned about the job's generation at its provider (by `idempotencyKey`).
 * Only `NotStarted` lets a start whose outcome was unknown be asked again, so an adapter answers
 * it only from a complete record; anything less certain is `Unknown`.
 */
export type Recovered =
  /** The provider holds the job's generation: the engine follows this handle. */
  | { readonly _tag: "Found"; readonly handle: ProviderHandle }
  /**
   * The provider's complete record of what it holds (every generation of the credential, read to
   * the end or back past the job's creation) has none for this job. A start request still in
   * flight may not show yet: `settledAfterMs` (at least the start call's request timeout) is how
   * long after such a request was sent it shows for sure, so the engine asks again that long after
   * the lost run's last possible start before it starts afresh.
   */
  | { readonly _tag: "NotStarted"; readonly settledAfterMs: number }
  /** The provider cannot say (no marker to search by, a list cut short): the job fails with a refund. */
  | { readonly _tag: "Unknown" }

/**
 * The provider answered with an error. `retryable` (429, 5xx, overloaded): the engine asks again
 * with capped exponential backoff and jitter, never sooner than `retryAfterMs`; otherwise the job
 * fails with GENERATION_FAILED and this message. From `start` it means nothing was started, so
 * starting again is safe; a 429 or 503 from `start` is an outage (isOutage), waited out until the
 * version's deadline rather than counted against `providerRetry.maxRetries`.
 */
export class ProviderRejected extends Schema.TaggedError<ProviderRejected>()("ProviderRejected", {
  message: Schema.String,
  retryable: Schema.Boolean,
  retryAfterMs: Schema.optional(Schema.Number),
  /** The provider's HTTP status, when there was one. */
  httpStatus: Schema.optional(Schema.Number),
  /** The provider's own error code, type or category, as it sent it (classifyFailure reads it). */
  providerCode: Schema.optional(Schema.String),
  /** The provider said the request (or its result) broke its content policy. */
  contentBlocked: Schema.optional(Schema.Boolean),
  /** The answer held a result that failed the adapter's checks (no output it can fetch). */
  outputInvalid: Schema.optional(Schema.Boolean)
}) {}

/**
 * No usable answer: refused connection, reset, timeout, an unreadable body. Retried for `poll`
 * and `cancel`. From `start` the outcome is unknown (the provider may have started), so the engine
 * does not start again: it asks `recover`, and without a found handle fails the job with a refund;
 * unless `notSent` says the request never left.
 */
export class ProviderUnreachable extends Schema.TaggedError<ProviderUnreachable>()("ProviderUnreachable", {
  message: Schema.String,
  /**
   * The request provably never reached the provider: the connection was refused, the name did
   * not resolve, TLS failed in its handshake, before a byte of the request was written. Nothing
   * can have started, so a start may be asked again. False whenever the request may have arrived
   * (a reset, a timeout, a broken answer).
   */
  notSent: Schema.Boolean.pipe(Schema.withDecodingDefaultType(Effect.succeed(false)), Schema.withConstructorDefault(Effect.succeed(false))),
  /** It was the request's time that ran out (no answer within the call's timeout), not a refused or broken connection. */
  timedOut: Schema.optional(Schema.Boolean)
}) {}

export type ProviderError = ProviderRejected | ProviderUnreachable

/**
 * The provider is down or turning work away, and provably took nothing: a request that never
 * reached it, or a refusal HTTP defines as "not processed, come back later" (429 Too Many
 * Requests, 503 Service Unavailable; an adapter whose provider may have created something on
 * such an answer reports it as ProviderUnreachable instead). A start that meets it waits with
 * backoff until the version's deadline instead of failing the job.
 */
export const isOutage = (error: ProviderError): boolean =>
  error._tag === "ProviderUnreachable"
    ? error.notSent
    : error.retryable && (error.httpStatus === 429 || error.httpStatus === 503)

/**
 * A refused start that lets the job move on to its version's next route: nothing was started
 * (an outage, or a retryable refusal such as a 500 before acceptance). A start whose outcome is
 * unknown (a timeout, a reset) never moves on: the provider may be running it.
 */
export const movesToNextRoute = (error: ProviderError): boolean =>
  isOutage(error) || (error._tag === "ProviderRejected" && error.retryable)

/**
 * Whether an error says the provider (with that credential) is unwell, for its circuit: no
 * answer, or a retryable refusal. A final refusal (bad input, payment) is an answer, not a failure.
 */
export const countsAgainstHealth = (error: ProviderError): boolean =>
  error._tag === "ProviderUnreachable" || error.retryable

/** What a provider error says happened, for classifyFailure: never the failure's type itself. */
export const factOfError = (error: ProviderError): FailureFact =>
  error._tag === "ProviderUnreachable"
    ? { _tag: "NoAnswer", timedOut: error.timedOut === true }
    : {
      _tag: "Refused",
      retryable: error.retryable,
      httpStatus: error.httpStatus,
      providerCode: error.providerCode,
      contentBlocked: error.contentBlocked,
      outputInvalid: error.outputInvalid
    }

/** What a generation's failure at its provider says happened. */
export const factOfFailed = (failed: Failed): FailureFact => ({
  _tag: "GenerationFailed",
  providerCode: failed.providerCode,
  contentBlocked: failed.contentBlocked,
  outputInvalid: failed.outputInvalid,
  httpStatus: failed.httpStatus
})

/** A provider's callback as it arrived at the engine's endpoint. */
export interface CallbackRequest {
  readonly headers: Readonly<Record<string, string>>
  /** The raw body: signatures are computed over the exact bytes. */
  readonly body: Uint8Array
  /**
   * The credential the job's generation was started with, when the engine has recorded it: a
   * provider whose signing secret is per credential checks the callback with that one only.
   */
  readonly credentialId?: string
}

/** A callback that failed the provider's documented check (signature, timestamp, shape). */
export class CallbackRejected extends Schema.TaggedError<CallbackRejected>()("CallbackRejected", {
  message: Schema.String
}) {}

/** A verified callback: which generation it is about. The engine then polls that handle at once. */
export interface ProviderCallback {
  readonly handleId: string
}

/**
 * A generation provider: remote and long-running (seconds to minutes), paid per start. A provider
 * that answers in one call implements `start` with `Finished` and a `poll` that is never called.
 */
export interface GenerationProvider {
  readonly start: (request: ProviderRequest) => Effect.Effect<StartOutcome, ProviderError>
  readonly poll: (handle: ProviderHandle, request: ProviderRequest) => Effect.Effect<ProviderStatus, ProviderError>
  /** Best effort: a deadline or a cancel tells the provider to stop; the job ends either way. */
  readonly cancel: (handle: ProviderHandle, request: ProviderRequest) => Effect.Effect<void, ProviderError>
  /**
   * After a crash between asking for a start and committing its handle, or a start whose answer
   * never came: the generation the provider already holds for this job (by `idempotencyKey`);
   * the engine then follows it. A job taken over from a crashed run starts afresh only when every
   * route and credential answers `NotStarted`, twice, `settledAfterMs` apart. Without `recover`,
   * or on `Unknown` or an error, such a job fails with a refund rather than risk a second start.
   */
  readonly recover?: (request: ProviderRequest) => Effect.Effect<Recovered, ProviderError>
  /** For providers that call back when done: checks a callback as the provider documents. */
  readonly verifyCallback?: (request: CallbackRequest) => Effect.Effect<ProviderCallback, CallbackRejected>
  /** How long to wait between polls when the provider gives no hint. */
  readonly pollIntervalMs?: number
  /**
   * The credentials the provider holds, when more than one may be chosen: the engine picks one
   * for each start (by weight and load, skipping those whose circuit is open), passes its id as
   * `ProviderRequest.credentialId` and stores it with the job's handle.
   */
  readonly credentials?: ReadonlyArray<ProviderCredential>
  /** Values a job's log lines must never show (the provider's credentials): replaced before a line is kept. */
  readonly logSecrets?: ReadonlyArray<string>
}

/** Providers by the provider id the catalog's models name. */
export class Providers extends Context.Service<Providers, {
  readonly forProvider: (providerId: string) => Option.Option<GenerationProvider>
  /** The ids registered, when known: the health endpoint lists each, called or not. */
  readonly providerIds?: ReadonlyArray<string>
}>()("genjobs/Providers") {}

export const layerProviders = (byId: Readonly<Record<string, GenerationProvider>>) =>
  Layer.succeed(Providers, { forProvider: (providerId) => Option.fromNullishOr(byId[providerId]), providerIds: Object.keys(byId) })
