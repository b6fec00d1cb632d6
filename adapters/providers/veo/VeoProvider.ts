import { Effect } from "effect"
import { HttpClientRequest } from "effect/http"
import {
  type GenerationProvider,
  type ProviderHandle,
  ProviderRejected,
  type ProviderStatus
} from "../../../src/ports/Provider.js"
import { type CredentialsOption, credentialSet } from "../credentials.js"
import { apiRoot, connectionPool, sendJson } from "../providerHttp.js"
import { urlOutput } from "../providerOutputs.js"
import { veoApi } from "./api.js"
import { predictBody } from "./request.js"
import { GRPC_CODE_NAMES, OPERATION_NAME, Operation } from "./schema.js"

/** The provider id catalogs name for Veo models served by the Gemini API. */
export const VEO_PROVIDER_ID = "veo"
export const VEO_BASE_URL = "https://generativelanguage.googleapis.com"

export interface VeoOptions {
  /**
   * A Gemini API key, or several (comma-separated, or a list of keys or of `{ id?, secret,
   * weight? }`): each job keeps the one it started with. Sent only to `baseUrl` as
   * `x-goog-api-key`, never logged.
   */
  readonly apiKey: CredentialsOption
  /** The API root, without `/v1beta`. Default https://generativelanguage.googleapis.com; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /** Between polls of an operation. Default 10 s, as Google's examples poll. */
  readonly pollIntervalMs?: number | undefined
  /** The longest wait for one answer of the API. Default 60 s. */
  readonly requestTimeoutMs?: number | undefined
  /**
   * Connections kept open to each host of the API, at most (default 64): requests beyond them
   * wait their turn, and that wait does not count against the request's timeout.
   */
  readonly maxConnections?: number | undefined
}

/** A model id as the Gemini API names it (`veo-3.1-generate-preview`), with or without `models/`. */
const modelIdOf = (providerModel: string): string | undefined =>
  /^(?:models\/)?([A-Za-z0-9][\w.-]*)$/.exec(providerModel)?.[1]

const refused = (message: string) => new ProviderRejected({ message, retryable: false })

/**
 * Veo (3.0, 3.1) through the Gemini API as a generation provider: a long-running operation
 * started with `POST /v1beta/models/{model}:predictLongRunning`, followed with `GET
 * /v1beta/{operation name}` until `done`, its videos downloaded from their file URIs with the
 * key. The operation name is the whole handle. No request is retried here: the engine retries
 * what comes back retryable.
 */
export const veoProvider = (options: VeoOptions): GenerationProvider => {
  const keys = credentialSet("Gemini API", options.apiKey)
  const base = apiRoot(options.baseUrl ?? VEO_BASE_URL)
  const origin = new URL(base).origin
  const api = { ...veoApi(keys.secrets), connections: connectionPool(options.maxConnections) }
  const timeoutMs = options.requestTimeoutMs ?? 60_000
  const keyHeader = (key: string) => ({ "x-goog-api-key": key })

  /** One call with the key of the job's credential (`credentialId`). */
  const call = (request: HttpClientRequest.HttpClientRequest, credentialId: string | undefined, isStart = false) =>
    Effect.flatMap(keys.secretFor(credentialId), (key) =>
      sendJson(api, HttpClientRequest.setHeaders(request, keyHeader(key)), Operation, { timeoutMs, isStart }))

  /** A file URI on the API's own host needs the job's key to download; the key goes nowhere else. */
  const headersFor = (key: string) => (uri: string) => (URL.canParse(uri) && new URL(uri).origin === origin ? keyHeader(key) : undefined)

  const statusOf = (operation: Operation, key: string): ProviderStatus => {
    if (operation.done !== true) return { _tag: "Running" }
    if (operation.error !== undefined) {
      const code = operation.error.status ?? operation.error.code
      const providerCode = operation.error.status ?? (operation.error.code === undefined ? undefined : GRPC_CODE_NAMES[operation.error.code])
      return {
        _tag: "Failed",
        message: `Veo could not generate the video: ${operation.error.message ?? "no reason given"}${code === undefined ? "" : ` (${code})`}`,
        ...(providerCode === undefined ? {} : { providerCode })
      }
    }
    const result = operation.response?.generateVideoResponse
    const outputs = (result?.generatedSamples ?? []).flatMap(({ video }) =>
      video?.uri === undefined
        ? []
        : [urlOutput(video.uri, "video", { contentType: video.mimeType ?? "video/mp4", headers: headersFor(key)(video.uri) })]
    )
    if (outputs.length > 0) return { _tag: "Succeeded", outputs }
    const reasons = result?.raiMediaFilteredReasons ?? []
    const filtered = reasons.length > 0 || (result?.raiMediaFilteredCount ?? 0) > 0
    return filtered
      ? { _tag: "Failed", message: `Veo's safety filters removed the video: ${reasons.join("; ") || "no reason given"}`, contentBlocked: true }
      : { _tag: "Failed", message: "Veo finished the operation without a video", outputInvalid: true }
  }

  const operationUrl = (handle: ProviderHandle) =>
    OPERATION_NAME.test(handle.id)
      ? Effect.succeed(`${base}/v1beta/${handle.id}`)
      : Effect.fail(refused(`"${handle.id}" is not a Gemini API operation name`))

  return {
    pollIntervalMs: options.pollIntervalMs ?? 10_000,
    ...(keys.credentials === undefined ? {} : { credentials: keys.credentials }),
    logSecrets: keys.secrets,

    start: (request) =>
      Effect.gen(function*() {
        const model = modelIdOf(request.providerModel)
        if (model === undefined) {
          return yield* refused(`"${request.providerModel}" is not a Gemini API model id: use e.g. "veo-3.1-generate-preview"`)
        }
        const operation = yield* call(
          HttpClientRequest.bodyJsonUnsafe(HttpClientRequest.post(`${base}/v1beta/models/${model}:predictLongRunning`), predictBody(request.input)),
          request.credentialId,
          true
        )
        return { _tag: "Started" as const, handle: { id: operation.name } }
      }),

    poll: (handle, request) =>
      Effect.gen(function*() {
        const key = yield* keys.secretFor(request.credentialId)
        const operation = yield* call(HttpClientRequest.get(yield* operationUrl(handle)), request.credentialId)
        return statusOf(operation, key)
      }),

    // The Gemini API documents no way to stop a video operation: it runs to its end at Google,
    // and the engine no longer asks about it.
    cancel: () => Effect.void
  }
}
