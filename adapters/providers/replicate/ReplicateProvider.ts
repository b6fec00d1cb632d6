import { HttpClientRequest } from "@effect/platform"
import { Clock, Effect, Option, Redacted, Ref, Schema } from "effect"
import {
  CallbackRejected,
  type GenerationProvider,
  type ProviderHandle,
  ProviderRejected,
  type ProviderRequest,
  type ProviderStatus
} from "../../../src/ports/Provider.js"
import { declaredOutputType } from "../providerOutputs.js"
import { type Answer, decodeAnswer, failureOf, isSuccess, jsonOf, lowerCaseKeys, send } from "../providerHttp.js"
import { outputsOf, progressOfLogs } from "./outputs.js"
import { Prediction, PredictionPage, Problem, WebhookBody, WebhookSecret } from "./schema.js"
import { webhookProblem } from "./webhookSignature.js"

/** The provider id catalogs name for Replicate models. */
export const REPLICATE_PROVIDER_ID = "replicate"
export const REPLICATE_BASE_URL = "https://api.replicate.com"

export interface ReplicateOptions {
  /** An API token (r8_...). Sent only to `baseUrl`, never logged. */
  readonly apiToken: string | Redacted.Redacted<string>
  /** Default https://api.replicate.com; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /**
   * The webhook signing secret (whsec_...). Without it the adapter asks Replicate for it
   * (GET /v1/webhooks/default/secret) when the first callback arrives, and keeps it an hour.
   */
  readonly webhookSecret?: string | Redacted.Redacted<string> | undefined
  /** Between polls when no callback comes. Default 2000 ms. */
  readonly pollIntervalMs?: number | undefined
  /** For each API call. Default 30 s. */
  readonly requestTimeoutMs?: number | undefined
}

/**
 * The query parameter that carries the job's idempotency key in the webhook URL of its
 * prediction. Replicate takes no idempotency key and keeps no metadata, but it keeps the webhook
 * URL: `recover` finds the job's prediction by it.
 */
export const MARKER_PARAM = "genjobs_key"

/** How far back `recover` pages through recent predictions (100 a page). */
const RECOVER_MAX_PAGES = 10
/** Predictions created this long before the job still count: clocks differ. */
const RECOVER_CLOCK_SKEW_MS = 5 * 60_000
const SECRET_KEPT_MS = 60 * 60_000

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

/** Problem details' `detail` (else `title`), as one line. */
const problemMessage = (answer: Answer): string | undefined => {
  const decoded = Schema.decodeUnknownOption(Problem)(jsonOf(answer))
  if (Option.isNone(decoded)) return undefined
  const { detail, title } = decoded.value
  if (typeof detail === "string") return detail
  return detail === undefined ? title : JSON.stringify(detail)
}

const messageOf = (error: unknown): string | undefined =>
  error === null || error === undefined ? undefined : typeof error === "string" ? error : JSON.stringify(error)

/** Replicate's predictions API as a generation provider, with its webhooks as callbacks. */
export const replicateProvider = (options: ReplicateOptions): GenerationProvider => {
  const base = (options.baseUrl ?? REPLICATE_BASE_URL).replace(/\/+$/, "")
  const origin = new URL(base).origin
  const token = typeof options.apiToken === "string" ? Redacted.make(options.apiToken) : options.apiToken
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  const authorization = () => ({ authorization: `Bearer ${Redacted.value(token)}` })

  const call = (request: HttpClientRequest.HttpClientRequest, what: string, isStart = false) =>
    send(HttpClientRequest.setHeaders(request, authorization()), { what, timeoutMs }).pipe(
      Effect.flatMap((answer) =>
        isSuccess(answer) ? Effect.succeed(answer) : failureOf(answer, { what, message: problemMessage(answer), isStart })
      )
    )

  const predictionUrl = (handle: ProviderHandle) => `${base}/v1/predictions/${encodeURIComponent(handle.id)}`

  /** Output files on the API's own host (its files API) need the token; replicate.delivery URLs need nothing. */
  const headersFor = (url: string) => {
    try {
      return new URL(url).origin === origin ? authorization() : undefined
    } catch {
      return undefined
    }
  }

  const statusOf = (prediction: Prediction, request: ProviderRequest): ProviderStatus => {
    switch (prediction.status) {
      case "starting":
      case "processing": {
        const progress = progressOfLogs(prediction.logs)
        return { _tag: "Running", ...(progress === undefined ? {} : { progress }) }
      }
      case "succeeded": {
        const outputs = outputsOf(prediction.output, declaredOutputType(request), headersFor)
        return outputs.length === 0
          ? { _tag: "Failed", message: "The prediction succeeded without an output" }
          : { _tag: "Succeeded", outputs }
      }
      case "failed":
        return { _tag: "Failed", message: messageOf(prediction.error) ?? "The prediction failed" }
      case "canceled":
      case "aborted":
        return { _tag: "Failed", message: "The prediction was cancelled at Replicate" }
    }
  }

  const secretCache = Ref.unsafeMake<{ readonly secret: string; readonly at: number } | undefined>(undefined)
  const signingSecret = options.webhookSecret !== undefined
    ? Effect.succeed(typeof options.webhookSecret === "string" ? options.webhookSecret : Redacted.value(options.webhookSecret))
    : Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const cached = yield* Ref.get(secretCache)
      if (cached !== undefined && now - cached.at < SECRET_KEPT_MS) return cached.secret
      const what = "Replicate webhook secret"
      const { key } = yield* decodeAnswer(WebhookSecret, yield* call(HttpClientRequest.get(`${base}/v1/webhooks/default/secret`), what), what)
      yield* Ref.set(secretCache, { secret: key, at: now })
      return key
    })

  return {
    pollIntervalMs: options.pollIntervalMs ?? 2000,

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
        const what = "Replicate create prediction"
        const answer = yield* call(HttpClientRequest.bodyUnsafeJson(HttpClientRequest.post(`${base}${target.path}`), body), what, true)
        const created = yield* decodeAnswer(Prediction, answer, what)
        return { _tag: "Started" as const, handle: { id: created.id } }
      }),

    poll: (handle, request) => {
      const what = "Replicate get prediction"
      return call(HttpClientRequest.get(predictionUrl(handle)), what).pipe(
        Effect.flatMap((answer) => decodeAnswer(Prediction, answer, what)),
        Effect.map((prediction) => statusOf(prediction, request))
      )
    },

    cancel: (handle) =>
      call(HttpClientRequest.post(`${predictionUrl(handle)}/cancel`), "Replicate cancel prediction").pipe(
        Effect.asVoid,
        // A prediction Replicate no longer knows has nothing left to stop.
        Effect.catchIf((error) => error._tag === "ProviderRejected" && error.httpStatus === 404, () => Effect.void)
      ),

    /**
     * Pages through the newest predictions (back to shortly before the job was created) for the
     * one whose webhook URL carries the job's idempotency key. A job started without a callback
     * URL left no marker: nothing can be told apart, so nothing is found.
     */
    recover: (request) =>
      Effect.gen(function*() {
        if (request.callbackUrl === undefined) return Option.none()
        const notBefore = request.job.createdAt - RECOVER_CLOCK_SKEW_MS
        const what = "Replicate list predictions"
        let url: string | undefined = `${base}/v1/predictions`
        for (let page = 0; page < RECOVER_MAX_PAGES && url !== undefined; page++) {
          const listed: typeof PredictionPage.Type = yield* decodeAnswer(PredictionPage, yield* call(HttpClientRequest.get(url), what), what)
          for (const prediction of listed.results) {
            if (markerOf(prediction.webhook) === request.idempotencyKey) return Option.some({ id: prediction.id })
            const created = Date.parse(prediction.created_at ?? "")
            if (created < notBefore) return Option.none()
          }
          // The token goes with each page: follow only pages on the API's own host.
          url = listed.next !== null && listed.next !== undefined && URL.canParse(listed.next) && new URL(listed.next).origin === origin
            ? listed.next
            : undefined
        }
        return Option.none()
      }),

    verifyCallback: (callback) =>
      Effect.gen(function*() {
        const headers = lowerCaseKeys(callback.headers)
        const secret = yield* signingSecret.pipe(
          Effect.mapError(() => new CallbackRejected({ message: "The webhook signing secret could not be fetched from Replicate" }))
        )
        const problem = webhookProblem(
          { id: headers["webhook-id"], timestamp: headers["webhook-timestamp"], signature: headers["webhook-signature"] },
          callback.body,
          secret,
          yield* Clock.currentTimeMillis
        )
        if (problem !== undefined) return yield* new CallbackRejected({ message: `Replicate webhook refused: ${problem}` })
        const body = yield* Schema.decodeUnknown(Schema.parseJson(WebhookBody))(new TextDecoder().decode(callback.body)).pipe(
          Effect.mapError(() => new CallbackRejected({ message: "Replicate webhook refused: the body is not a prediction" }))
        )
        return { handleId: body.id }
      })
  }
}
