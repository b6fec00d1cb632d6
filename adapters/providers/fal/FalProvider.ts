import { Clock, Effect } from "effect"
import { HttpClientRequest } from "effect/http"
import type { KeyObject } from "node:crypto"
import {
  CallbackRejected,
  type GenerationProvider,
  type ProviderHandle,
  ProviderRejected,
  type ProviderError,
  type ProviderRequest,
  type ProviderStatus
} from "../../../src/ports/Provider.js"
import { type CredentialsOption, credentialSet } from "../credentials.js"
import { apiRoot, connectionPool, decodeAnswer, errorFactsOf, exchange, ignoringStatuses, isSuccess, lowerCaseKeys, rejection, saidIn, send, sendJson, shown } from "../providerHttp.js"
import { declaredOutputType } from "../providerOutputs.js"
import { falApi, isRequestOutcome } from "./api.js"
import { outputsOf } from "./outputs.js"
import { Queued, QueueResult, QueueStatus } from "./schema.js"
import { falWebhookProblem, parsePublicKeys } from "./webhookSignature.js"

/** The provider id catalogs name for fal.ai models. */
export const FAL_PROVIDER_ID = "fal"
export const FAL_BASE_URL = "https://queue.fal.run"

export interface FalOptions {
  /**
   * A fal.ai API key, or several (comma-separated, or a list of keys or of `{ id?, secret,
   * weight? }`): each job keeps the one it started with. Sent as `Authorization: Key ...` to
   * `baseUrl` only, never logged.
   */
  readonly apiKey: CredentialsOption
  /** The queue's address. Default https://queue.fal.run; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /**
   * The public keys fal.ai signs webhooks with: its JWKS document, one JWK, or base64 raw
   * Ed25519 keys (see parsePublicKeys). Without them no webhook is asked for: jobs are polled.
   */
  readonly webhookPublicKeys?: string | undefined
  /** Between polls when no callback comes. Default 2000 ms. */
  readonly pollIntervalMs?: number | undefined
  /** The longest wait for one answer of the queue. Default 30 s. */
  readonly requestTimeoutMs?: number | undefined
  /**
   * Connections kept open to each host of the API, at most (default 64): requests beyond them
   * wait their turn, and that wait does not count against the request's timeout.
   */
  readonly maxConnections?: number | undefined
}

interface RequestUrls {
  readonly statusUrl: string
  readonly responseUrl: string
  readonly cancelUrl: string
}

/** "fal-ai/flux/dev" is app "fal-ai/flux" with subpath "/dev": status and results live under the app only. */
const appOf = (model: string): string => model.split("/").slice(0, 2).join("/")

/** Path segments of letters, digits, "_", "." and "-", never "." or ".." (which a URL would resolve away). */
const isModelId = (model: string): boolean => /^\w[\w.-]*(\/\w[\w.-]*)+$/.test(model)

/** fal.ai's queue API as a generation provider, with its signed webhooks as callbacks. */
export const falProvider = (options: FalOptions): GenerationProvider => {
  const base = apiRoot(options.baseUrl ?? FAL_BASE_URL)
  const origin = new URL(base).origin
  const keys = credentialSet("fal.ai", options.apiKey)
  const api = { ...falApi(keys.secrets), connections: connectionPool(options.maxConnections) }
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  const publicKeys: ReadonlyArray<KeyObject> | undefined = options.webhookPublicKeys === undefined
    ? undefined
    : parsePublicKeys(options.webhookPublicKeys)

  /** The request with the key of the job's credential (`credentialId`). */
  const authorized = (request: HttpClientRequest.HttpClientRequest, credentialId: string | undefined) =>
    Effect.map(keys.secretFor(credentialId), (key) => HttpClientRequest.setHeader(request, "authorization", `Key ${key}`))

  /** The key goes with every call, so a URL from an answer is used only on the queue's own host. */
  const onQueueHost = (url: unknown): url is string =>
    typeof url === "string" && URL.canParse(url) && new URL(url).origin === origin

  const urlsOf = (handle: ProviderHandle, model: string): RequestUrls => {
    const built = `${base}/${appOf(model)}/requests/${encodeURIComponent(handle.id)}`
    const data = handle.data ?? {}
    return {
      statusUrl: onQueueHost(data["statusUrl"]) ? data["statusUrl"] : `${built}/status`,
      responseUrl: onQueueHost(data["responseUrl"]) ? data["responseUrl"] : built,
      cancelUrl: onQueueHost(data["cancelUrl"]) ? data["cancelUrl"] : `${built}/cancel`
    }
  }

  /** The result of a completed request: its outputs, or the error that is its outcome (see isRequestOutcome). */
  const result = (urls: RequestUrls, request: ProviderRequest) =>
    Effect.gen(function*(): Effect.fn.Return<ProviderStatus, ProviderError> {
      const answer = yield* exchange(api, yield* authorized(HttpClientRequest.get(urls.responseUrl), request.credentialId), timeoutMs)
      if (!isSuccess(answer)) {
        if (!isRequestOutcome(answer.status, answer.text)) return yield* rejection(api, answer)
        return {
          _tag: "Failed",
          message: shown(api, saidIn(api, answer) ?? `The request failed (HTTP ${answer.status})`),
          httpStatus: answer.status,
          ...errorFactsOf(api, answer)
        }
      }
      const outputs = outputsOf(yield* decodeAnswer(api, QueueResult, answer), declaredOutputType(request))
      return outputs.length === 0
        ? { _tag: "Failed", message: "The request completed without an output", outputInvalid: true }
        : { _tag: "Succeeded", outputs }
    })

  /** The status URL asking for the request's logs too (`logs=1`). */
  const withLogs = (statusUrl: string) => {
    const url = new URL(statusUrl)
    url.searchParams.set("logs", "1")
    return url.toString()
  }

  const provider: GenerationProvider = {
    pollIntervalMs: options.pollIntervalMs ?? 2000,
    ...(keys.credentials === undefined ? {} : { credentials: keys.credentials }),
    logSecrets: keys.secrets,

    start: (request) =>
      Effect.gen(function*() {
        if (!isModelId(request.providerModel)) {
          return yield* new ProviderRejected({
            message: `"${request.providerModel}" is not a fal.ai model id such as "fal-ai/flux/dev"`,
            retryable: false
          })
        }
        const url = new URL(`${base}/${request.providerModel}`)
        if (request.callbackUrl !== undefined && publicKeys !== undefined) url.searchParams.set("fal_webhook", request.callbackUrl)
        const submit = HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(url), request.input)
        const queued = yield* sendJson(api, yield* authorized(submit, request.credentialId), Queued, { timeoutMs, isStart: true })
        const urls = urlsOf({ id: queued.request_id }, request.providerModel)
        return {
          _tag: "Started" as const,
          handle: {
            id: queued.request_id,
            data: {
              statusUrl: onQueueHost(queued.status_url) ? queued.status_url : urls.statusUrl,
              responseUrl: onQueueHost(queued.response_url) ? queued.response_url : urls.responseUrl,
              cancelUrl: onQueueHost(queued.cancel_url) ? queued.cancel_url : urls.cancelUrl
            }
          }
        }
      }),

    poll: (handle, request) =>
      Effect.gen(function*() {
        const urls = urlsOf(handle, request.providerModel)
        const status = yield* sendJson(
          api,
          yield* authorized(HttpClientRequest.get(withLogs(urls.statusUrl)), request.credentialId),
          QueueStatus,
          { timeoutMs }
        )
        switch (status.status) {
          case "IN_QUEUE":
          case "IN_PROGRESS":
            // fal reports no percentage; its logs are the request's whole log so far on every poll.
            return status.logs == null
              ? { _tag: "Running" } satisfies ProviderStatus
              : { _tag: "Running", logs: status.logs.map((line) => line.message) } satisfies ProviderStatus
          case "FAILED":
            return {
              _tag: "Failed",
              message: shown(api, status.error ?? "The request failed at fal.ai"),
              ...(status.error_type == null ? {} : { providerCode: status.error_type })
            } satisfies ProviderStatus
          case "CANCELED":
          case "CANCELLED":
            return { _tag: "Failed", message: "The request was cancelled at fal.ai", providerCode: status.status } satisfies ProviderStatus
          case "COMPLETED":
            return typeof status.error === "string"
              ? {
                _tag: "Failed",
                message: shown(api, status.error),
                ...(status.error_type == null ? {} : { providerCode: status.error_type })
              } satisfies ProviderStatus
              : yield* result(urls, request)
        }
      }),

    // 400 is ALREADY_COMPLETED and 404 an unknown request: nothing left to stop either way.
    cancel: (handle, request) =>
      authorized(HttpClientRequest.put(urlsOf(handle, request.providerModel).cancelUrl), request.credentialId).pipe(
        Effect.flatMap((cancel) => send(api, cancel, { timeoutMs })),
        ignoringStatuses([400, 404])
      )
  }
  if (publicKeys === undefined) return provider
  return {
    ...provider,
    verifyCallback: (callback) =>
      Effect.gen(function*() {
        const headers = lowerCaseKeys(callback.headers)
        const problem = falWebhookProblem(
          {
            requestId: headers["x-fal-webhook-request-id"],
            userId: headers["x-fal-webhook-user-id"],
            timestamp: headers["x-fal-webhook-timestamp"],
            signature: headers["x-fal-webhook-signature"]
          },
          callback.body,
          publicKeys,
          yield* Clock.currentTimeMillis
        )
        if (problem !== undefined) return yield* new CallbackRejected({ message: `fal.ai webhook refused: ${problem}` })
        return { handleId: headers["x-fal-webhook-request-id"]! }
      })
  }
}
