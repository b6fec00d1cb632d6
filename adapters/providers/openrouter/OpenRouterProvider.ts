import { Clock, Effect, type Redacted, Schema } from "effect"
import { HttpClientRequest } from "effect/http"
import {
  CallbackRejected,
  type GenerationProvider,
  type ProviderHandle,
  ProviderRejected,
  type ProviderStatus
} from "../../../src/ports/Provider.js"
import { type CredentialsOption, credentialSet } from "../credentials.js"
import { apiRoot, connectionPool, lowerCaseKeys, secretValue, sendJson } from "../providerHttp.js"
import { urlOutput } from "../providerOutputs.js"
import { openRouterApi } from "./api.js"
import { VideoJob, WebhookEvent } from "./schema.js"
import { webhookProblem } from "./webhookSignature.js"

/** The provider id catalogs name for video models run through OpenRouter. */
export const OPENROUTER_PROVIDER_ID = "openrouter"
export const OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

export interface OpenRouterOptions {
  /**
   * An API key (sk-or-...), or several (comma-separated, or a list of keys or of `{ id?, secret,
   * weight? }`): each job keeps the one it started with. Sent only to `baseUrl`, never logged.
   */
  readonly apiKey: CredentialsOption
  /** The API root, with its version. Default https://openrouter.ai/api/v1; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /**
   * The webhook signing secret configured in the OpenRouter workspace. With it, jobs are
   * submitted with the engine's callback URL and callbacks are verified with it; without it,
   * nothing is asked to call back and jobs are polled.
   */
  readonly webhookSecret?: string | Redacted.Redacted<string> | undefined
  /** Between polls when no callback comes. Default 15 s (OpenRouter suggests 10 to 30 s). */
  readonly pollIntervalMs?: number | undefined
  /** The longest wait for one answer of the API. Default 60 s. */
  readonly requestTimeoutMs?: number | undefined
  /**
   * Connections kept open to each host of the API, at most (default 64): requests beyond them
   * wait their turn, and that wait does not count against the request's timeout.
   */
  readonly maxConnections?: number | undefined
}

/** OpenRouter's model ids: `owner/name`, optionally with a `:variant`. */
const MODEL_ID = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.:-]*$/

/**
 * OpenRouter's asynchronous video API as a generation provider: a job submitted with `POST
 * /videos`, polled at `GET /videos/{jobId}`, its videos downloaded from the content endpoint with
 * the key; with a webhook secret, its signed callbacks hurry the poll. The job id is the whole
 * handle. No request is retried here: the engine retries what comes back retryable.
 */
export const openRouterProvider = (options: OpenRouterOptions): GenerationProvider => {
  const keys = credentialSet("OpenRouter", options.apiKey)
  const base = apiRoot(options.baseUrl ?? OPENROUTER_BASE_URL)
  const origin = new URL(base).origin
  const api = { ...openRouterApi(keys.secrets), connections: connectionPool(options.maxConnections) }
  const timeoutMs = options.requestTimeoutMs ?? 60_000
  const authorization = (key: string) => ({ authorization: `Bearer ${key}` })
  const webhookSecret = options.webhookSecret === undefined ? undefined : secretValue(options.webhookSecret)

  /** One call with the key of the job's credential (`credentialId`). */
  const call = (request: HttpClientRequest.HttpClientRequest, credentialId: string | undefined, isStart = false) =>
    Effect.flatMap(keys.secretFor(credentialId), (key) =>
      sendJson(api, HttpClientRequest.setHeaders(request, authorization(key)), VideoJob, { timeoutMs, isStart }))

  /** The content endpoint needs the job's key; a signed URL elsewhere needs nothing, and never gets the key. */
  const headersFor = (key: string) => (url: string) => (URL.canParse(url) && new URL(url).origin === origin ? authorization(key) : undefined)

  const completed = (job: VideoJob, key: string): ProviderStatus => {
    const urls = job.unsigned_urls ?? []
    if (urls.length === 0) return { _tag: "Failed", message: "OpenRouter completed the video without a URL to fetch it from", outputInvalid: true }
    const metadata = job.generation_id == null ? undefined : { generationId: job.generation_id }
    return {
      _tag: "Succeeded",
      outputs: urls.map((url) => urlOutput(url, "video", { contentType: "video/mp4", headers: headersFor(key)(url), metadata }))
    }
  }

  const statusOf = (job: VideoJob, key: string): ProviderStatus => {
    switch (job.status) {
      case "pending":
      case "in_progress":
        return { _tag: "Running" }
      case "completed":
        return completed(job, key)
      case "failed":
        return { _tag: "Failed", message: `OpenRouter could not generate the video: ${job.error ?? "no reason given"}` }
      case "cancelled":
        return { _tag: "Failed", message: "The video generation was cancelled at OpenRouter", providerCode: job.status }
      case "expired":
        return { _tag: "Failed", message: "The video generation expired at OpenRouter before it was fetched", providerCode: job.status }
    }
  }

  const jobUrl = (handle: ProviderHandle) => `${base}/videos/${encodeURIComponent(handle.id)}`

  return {
    pollIntervalMs: options.pollIntervalMs ?? 15_000,
    ...(keys.credentials === undefined ? {} : { credentials: keys.credentials }),
    logSecrets: keys.secrets,

    start: (request) =>
      Effect.gen(function*() {
        if (!MODEL_ID.test(request.providerModel)) {
          return yield* new ProviderRejected({
            message: `"${request.providerModel}" is not an OpenRouter model id: use "owner/name", e.g. "google/veo-3.1"`,
            retryable: false
          })
        }
        const body = {
          ...request.input,
          model: request.providerModel,
          ...(webhookSecret === undefined || request.callbackUrl === undefined ? {} : { callback_url: request.callbackUrl })
        }
        const job = yield* call(HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(`${base}/videos`), body), request.credentialId, true)
        return { _tag: "Started" as const, handle: { id: job.id } }
      }),

    poll: (handle, request) =>
      Effect.gen(function*() {
        const key = yield* keys.secretFor(request.credentialId)
        return statusOf(yield* call(HttpClientRequest.get(jobUrl(handle)), request.credentialId), key)
      }),

    // OpenRouter documents no way to stop a video job: it runs to its end (and is charged), and
    // the engine no longer asks about it.
    cancel: () => Effect.void,

    ...(webhookSecret === undefined ? {} : {
      verifyCallback: (callback) =>
        Effect.gen(function*() {
          const headers = lowerCaseKeys(callback.headers)
          const problem = webhookProblem(headers["x-openrouter-signature"], callback.body, webhookSecret, yield* Clock.currentTimeMillis)
          if (problem !== undefined) return yield* new CallbackRejected({ message: `OpenRouter webhook refused: ${problem}` })
          const event = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(WebhookEvent))(new TextDecoder().decode(callback.body)).pipe(
            Effect.mapError(() => new CallbackRejected({ message: "OpenRouter webhook refused: the body is not a video generation event" }))
          )
          return { handleId: event.data.id }
        })
    })
  }
}
