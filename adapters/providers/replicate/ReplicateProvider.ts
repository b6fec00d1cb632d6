import { Clock, Effect, type Redacted, Schema } from "effect"
import { HttpClientRequest } from "effect/http"
import {
  CallbackRejected,
  type GenerationProvider,
  type ProviderError,
  type ProviderHandle,
  ProviderRejected,
  type ProviderRequest,
  type ProviderStatus
} from "../../../src/ports/Provider.js"
import { type CredentialsOption, credentialSet } from "../credentials.js"
import { apiRoot, connectionPool, ignoringStatuses, lowerCaseKeys, secretValue, send, sendJson } from "../providerHttp.js"
import { declaredOutputType } from "../providerOutputs.js"
import { replicateApi } from "./api.js"
import { lastPercentOf, logTextLines } from "../../../src/domain/providerLogs.js"
import { outputsOf } from "./outputs.js"
import { Prediction, PredictionPage, WebhookBody, WebhookSecret } from "./schema.js"
import { keptSecret, webhookProblem } from "./webhookSignature.js"

/** The provider id catalogs name for Replicate models. */
export const REPLICATE_PROVIDER_ID = "replicate"
export const REPLICATE_BASE_URL = "https://api.replicate.com"

export interface ReplicateOptions {
  /**
   * An API token (r8_...), or several (comma-separated, or a list of tokens or of
   * `{ id?, secret, weight? }`): each job keeps the one it started with. Sent only to `baseUrl`,
   * never logged.
   */
  readonly apiToken: CredentialsOption
  /** Default https://api.replicate.com; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /**
   * The webhook signing secret (whsec_...). Without it the adapter asks Replicate for it
   * (GET /v1/webhooks/default/secret) when the first callback arrives, and keeps it an hour
   * (a failed fetch, a minute).
   */
  readonly webhookSecret?: string | Redacted.Redacted<string> | undefined
  /** Between polls when no callback comes. Default 2000 ms. */
  readonly pollIntervalMs?: number | undefined
  /** The longest wait for one answer of the API. Default 30 s. */
  readonly requestTimeoutMs?: number | undefined
  /**
   * Connections kept open to each host of the API, at most (default 64): requests beyond them
   * wait their turn, and that wait does not count against the request's timeout.
   */
  readonly maxConnections?: number | undefined
}

/**
 * The query parameter that carries the job's idempotency key in the webhook URL of its
 * prediction. Replicate takes no idempotency key and keeps no metadata, but it keeps the webhook
 * URL: `recover` finds the job's prediction by it.
 */
export const MARKER_PARAM = "genjobs_key"

/** How far back `recover` pages through recent predictions (100 a page); a search cut here is Unknown. */
const RECOVER_MAX_PAGES = 10
/** Predictions created this long before the job still count: clocks differ. */
const RECOVER_CLOCK_SKEW_MS = 5 * 60_000

type Target = { readonly path: string; readonly version?: string }

/**
 * Where a prediction of the catalog's provider model is created: "owner/name" runs the
 * model's current version (POST /v1/models/{owner}/{name}/predictions); "owner/name:<version>"
 * or a bare 64-hex version id runs that version (POST /v1/predictions).
 */
export const targetOf = (model: string): Target | undefined => {
  const versioned = /^(?:\w[\w.-]*\/\w[\w.-]*:)?([0-9a-f]{64})$/.exec(model)
  if (versioned !== null) return { path: "/v1/predictions", version: versioned[1]! }
  const named = /^(\w[\w.-]*)\/(\w[\w.-]*)$/.exec(model)
  return named === null ? undefined : { path: `/v1/models/${named[1]}/${named[2]}/predictions` }
}

const withMarker = (callbackUrl: string, key: string): string => {
  const url = new URL(callbackUrl)
  url.searchParams.set(MARKER_PARAM, key)
  return url.toString()
}

const markerOf = (webhook: string | null | undefined): string | null => {
  if (webhook === null || webhook === undefined) return null
  try {
    return new URL(webhook).searchParams.get(MARKER_PARAM)
  } catch {
    return null
  }
}

const messageOf = (error: unknown): string | undefined =>
  error === null || error === undefined ? undefined : typeof error === "string" ? error : JSON.stringify(error)

/**
 * A failed prediction carries only its model's error text; Replicate's safety checker says
 * "NSFW content detected", the only content-policy signal it gives.
 */
const flaggedNsfw = (message: string | undefined): boolean => message !== undefined && /\bNSFW\b/i.test(message)

/** Replicate's predictions API as a generation provider, with its webhooks as callbacks. */
export const replicateProvider = (options: ReplicateOptions): GenerationProvider => {
  const base = apiRoot(options.baseUrl ?? REPLICATE_BASE_URL)
  const origin = new URL(base).origin
  const tokens = credentialSet("Replicate", options.apiToken)
  const api = { ...replicateApi(tokens.secrets), connections: connectionPool(options.maxConnections) }
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  const authorization = (token: string) => ({ authorization: `Bearer ${token}` })
  /** The request with the token of the credential `credentialId` (the job's). */
  const authorized = (request: HttpClientRequest.HttpClientRequest, credentialId: string | undefined) =>
    Effect.map(tokens.secretFor(credentialId), (token) => HttpClientRequest.setHeaders(request, authorization(token)))

  const call = <A>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Decoder<A>,
    credentialId: string | undefined,
    isStart = false
  ) => Effect.flatMap(authorized(request, credentialId), (signed) => sendJson(api, signed, schema, { timeoutMs, isStart }))

  const predictionUrl = (handle: ProviderHandle) => `${base}/v1/predictions/${encodeURIComponent(handle.id)}`

  /** Output files on the API's own host (its files API) need the job's token; replicate.delivery URLs need nothing. */
  const headersFor = (token: string) => (url: string) => {
    try {
      return new URL(url).origin === origin ? authorization(token) : undefined
    } catch {
      return undefined
    }
  }

  const statusOf = (prediction: Prediction, request: ProviderRequest, token: string): ProviderStatus => {
    switch (prediction.status) {
      case "starting":
      case "processing": {
        // The logs are the prediction's whole output so far, on every poll: the engine keeps the lines it has not seen.
        // The bar still being drawn (the last line, without its newline) shows the current percentage.
        const progress = lastPercentOf((prediction.logs ?? "").split("\n"))
        return { _tag: "Running", logs: logTextLines(prediction.logs), ...(progress === undefined ? {} : { progress }) }
      }
      case "succeeded": {
        const outputs = outputsOf(prediction.output, declaredOutputType(request), headersFor(token))
        return outputs.length === 0
          ? { _tag: "Failed", message: "The prediction succeeded without an output", outputInvalid: true }
          : { _tag: "Succeeded", outputs }
      }
      case "failed": {
        const message = messageOf(prediction.error)
        return { _tag: "Failed", message: message ?? "The prediction failed", ...(flaggedNsfw(message) ? { contentBlocked: true } : {}) }
      }
      case "canceled":
      case "aborted":
        return { _tag: "Failed", message: "The prediction was cancelled at Replicate", providerCode: prediction.status }
    }
  }

  /** A credential's webhook signing secret, fetched with its token (each token's account has its own). */
  const fetchedSecrets = new Map(
    (tokens.credentials?.map(({ id }) => id) ?? [undefined]).map((credentialId) => [
      credentialId,
      keptSecret(Effect.map(call(HttpClientRequest.get(`${base}/v1/webhooks/default/secret`), WebhookSecret, credentialId), ({ key }) => key))
    ])
  )
  /**
   * The secrets a callback is checked against: the configured one; else the secret of the
   * credential its job started with; else (the job's credential not yet recorded) each one's.
   */
  const signingSecretsFor = (credentialId: string | undefined): ReadonlyArray<Effect.Effect<string, ProviderError>> => {
    if (options.webhookSecret !== undefined) return [Effect.succeed(secretValue(options.webhookSecret))]
    const own = credentialId === undefined ? undefined : fetchedSecrets.get(credentialId)
    return own === undefined ? [...fetchedSecrets.values()] : [own]
  }

  return {
    pollIntervalMs: options.pollIntervalMs ?? 2000,
    ...(tokens.credentials === undefined ? {} : { credentials: tokens.credentials }),
    logSecrets: tokens.secrets,

    start: (request) =>
      Effect.gen(function*() {
        const target = targetOf(request.providerModel)
        if (target === undefined) {
          return yield* new ProviderRejected({
            message: `"${request.providerModel}" is not a Replicate model: use "owner/name" or "owner/name:<version id>"`,
            retryable: false
          })
        }
        const body = {
          ...(target.version === undefined ? {} : { version: target.version }),
          input: request.input,
          ...(request.callbackUrl === undefined
            ? {}
            : { webhook: withMarker(request.callbackUrl, request.idempotencyKey), webhook_events_filter: ["completed"] })
        }
        const created = yield* call(
          HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(`${base}${target.path}`), body),
          Prediction,
          request.credentialId,
          true
        )
        return { _tag: "Started" as const, handle: { id: created.id } }
      }),

    // The hottest call at thousands of generations in flight: one lookup of the token, no generator.
    poll: (handle, request) =>
      Effect.flatMap(tokens.secretFor(request.credentialId), (token) =>
        Effect.map(
          sendJson(api, HttpClientRequest.setHeaders(HttpClientRequest.get(predictionUrl(handle)), authorization(token)), Prediction, { timeoutMs }),
          (prediction) => statusOf(prediction, request, token)
        )),

    // A prediction Replicate no longer knows (404) has nothing left to stop.
    cancel: (handle, request) =>
      Effect.flatMap(authorized(HttpClientRequest.post(`${predictionUrl(handle)}/cancel`), request.credentialId), (signed) =>
        send(api, signed, { timeoutMs })).pipe(ignoringStatuses([404])),

    /**
     * Pages through the newest predictions (back to shortly before the job was created) for the
     * one whose webhook URL carries the job's idempotency key. Replicate lists every prediction
     * of the token's account, newest first, so a search that reaches the end of the list or a
     * prediction older than the job is complete: nothing found is `NotStarted`. It is `Unknown`
     * when the job has no callback URL (a start without one leaves no marker), when a prediction
     * in the window has no webhook (it may be this job's, started by a run without a public URL),
     * and when the search stops early (its page limit, a next page off the API's host).
     */
    recover: (request) =>
      Effect.gen(function*() {
        const unknown = { _tag: "Unknown" } as const
        const notStarted = { _tag: "NotStarted", settledAfterMs: timeoutMs } as const
        if (request.callbackUrl === undefined) return unknown
        const notBefore = request.job.createdAt - RECOVER_CLOCK_SKEW_MS
        let url: string | undefined = `${base}/v1/predictions`
        for (let page = 0; page < RECOVER_MAX_PAGES; page++) {
          const listed: typeof PredictionPage.Type = yield* call(HttpClientRequest.get(url), PredictionPage, request.credentialId)
          for (const prediction of listed.results) {
            const marker = markerOf(prediction.webhook)
            if (marker === request.idempotencyKey) return { _tag: "Found", handle: { id: prediction.id } } as const
            const created = Date.parse(prediction.created_at ?? "")
            if (created < notBefore) return notStarted
            // A time that does not parse could be inside the window: treated as in it.
            if (prediction.webhook === null || prediction.webhook === undefined) return unknown
          }
          if (listed.next === null || listed.next === undefined) return notStarted
          // The token goes with each page: follow only pages on the API's own host.
          if (!URL.canParse(listed.next) || new URL(listed.next).origin !== origin) return unknown
          url = listed.next
        }
        return unknown
      }),

    verifyCallback: (callback) =>
      Effect.gen(function*() {
        const headers = lowerCaseKeys(callback.headers)
        const now = yield* Clock.currentTimeMillis
        const signed = { id: headers["webhook-id"], timestamp: headers["webhook-timestamp"], signature: headers["webhook-signature"] }
        let fetched = false
        let problem: string | undefined
        for (const signingSecret of signingSecretsFor(callback.credentialId)) {
          const secret = yield* Effect.option(signingSecret)
          if (secret._tag === "None") continue
          fetched = true
          problem = webhookProblem(signed, callback.body, secret.value, now)
          if (problem === undefined) break
        }
        if (!fetched) return yield* new CallbackRejected({ message: "The webhook signing secret could not be fetched from Replicate" })
        if (problem !== undefined) return yield* new CallbackRejected({ message: `Replicate webhook refused: ${problem}` })
        const body = yield* Schema.decodeUnknownEffect(Schema.fromJsonString(WebhookBody))(new TextDecoder().decode(callback.body)).pipe(
          Effect.mapError(() => new CallbackRejected({ message: "Replicate webhook refused: the body is not a prediction" }))
        )
        return { handleId: body.id }
      })
  }
}
