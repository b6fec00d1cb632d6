import { Effect, type Redacted } from "effect"
import type { GenerationProvider } from "../../../src/ports/Provider.js"
import { apiRoot, secretValue } from "../providerHttp.js"
import { openAIApi } from "./api.js"
import { generateImages } from "./images.js"
import { createVideo, retrieveVideo, type VideosApi } from "./videos.js"

/** The provider id catalogs name for OpenAI models. */
export const OPENAI_PROVIDER_ID = "openai"
export const OPENAI_BASE_URL = "https://api.openai.com/v1"

export interface OpenAIOptions {
  /** An API key (sk-...). Sent only to `baseUrl`, never logged. */
  readonly apiKey: string | Redacted.Redacted<string>
  /** The API root, with its version. Default https://api.openai.com/v1; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /** Sent as OpenAI-Organization. */
  readonly organization?: string | undefined
  /** Sent as OpenAI-Project. */
  readonly project?: string | undefined
  /** Between polls of a video. Default 10 s (OpenAI gives no hint). */
  readonly pollIntervalMs?: number | undefined
  /** The longest wait for one answer of the Videos API (create, retrieve). Default 60 s. */
  readonly requestTimeoutMs?: number | undefined
  /** The longest wait for an Images API answer, which holds the generation itself. Default 5 min. */
  readonly imageRequestTimeoutMs?: number | undefined
}

/** Sora models go to the Videos API; every other model to the Images API. */
export const isOpenAIVideoModel = (model: string): boolean => /^sora(-|$)/.test(model)

/**
 * OpenAI as a generation provider. Images (gpt-image-1, dall-e-3, ...) come back within the start
 * call; Sora videos are created, polled and fetched from their content endpoint. No request is
 * retried here: the engine retries what comes back retryable.
 */
export const openaiProvider = (options: OpenAIOptions): GenerationProvider => {
  const apiKey = secretValue(options.apiKey)
  const baseUrl = apiRoot(options.baseUrl ?? OPENAI_BASE_URL)
  const api = openAIApi(apiKey)
  const headers: Record<string, string> = {
    authorization: `Bearer ${apiKey}`,
    ...(options.organization === undefined ? {} : { "openai-organization": options.organization }),
    ...(options.project === undefined ? {} : { "openai-project": options.project })
  }
  const videos: VideosApi = { api, baseUrl, headers, timeoutMs: options.requestTimeoutMs ?? 60_000 }
  const imageTimeoutMs = options.imageRequestTimeoutMs ?? 300_000
  return {
    pollIntervalMs: options.pollIntervalMs ?? 10_000,
    start: (request) =>
      isOpenAIVideoModel(request.providerModel)
        ? createVideo(videos, request)
        : generateImages(api, baseUrl, headers, imageTimeoutMs, request),
    poll: (handle) => retrieveVideo(videos, handle),
    // OpenAI documents no way to stop a video in progress (DELETE only removes finished ones): the
    // generation runs to its end at OpenAI and the engine no longer asks about it.
    cancel: () => Effect.void
  }
}
