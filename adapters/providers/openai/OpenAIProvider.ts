import { Effect, Redacted } from "effect"
import type { GenerationProvider } from "../../../src/ports/Provider.js"
import { openAIApi } from "./api.js"
import { generateImages } from "./images.js"
import { createVideo, retrieveVideo, type VideosApi } from "./videos.js"

export const OPENAI_BASE_URL = "https://api.openai.com/v1"

export interface OpenAIProviderOptions {
  readonly apiKey: Redacted.Redacted<string> | string
  /** The API root, with its version: default https://api.openai.com/v1. */
  readonly baseUrl?: string
  /** Sent as OpenAI-Organization. */
  readonly organization?: string
  /** Sent as OpenAI-Project. */
  readonly project?: string
  /** The longest wait for a Videos API answer (create, retrieve): default 60 s. */
  readonly timeoutMs?: number
  /** The longest wait for an Images API answer, which holds the generation itself: default 5 min. */
  readonly imageTimeoutMs?: number
  /** Between polls of a video: default 10 s (OpenAI gives no hint). */
  readonly pollIntervalMs?: number
}

/** Sora models go to the Videos API; every other model to the Images API. */
export const isOpenAIVideoModel = (model: string): boolean => /^sora(-|$)/.test(model)

/**
 * OpenAI as a generation provider. Images (gpt-image-1, dall-e-3, ...) come back within the start
 * call; Sora videos are created, polled and fetched from their content endpoint. No request is
 * retried here: the engine retries what comes back retryable.
 */
export const openaiProvider = (options: OpenAIProviderOptions): GenerationProvider => {
  const apiKey = typeof options.apiKey === "string" ? options.apiKey : Redacted.value(options.apiKey)
  const baseUrl = (options.baseUrl ?? OPENAI_BASE_URL).replace(/\/+$/, "")
  const api = openAIApi(apiKey)
  const headers: Record<string, string> = {
    authorization: `Bearer ${apiKey}`,
    ...(options.organization === undefined ? {} : { "openai-organization": options.organization }),
    ...(options.project === undefined ? {} : { "openai-project": options.project })
  }
  const videos: VideosApi = { api, baseUrl, headers, timeoutMs: options.timeoutMs ?? 60_000 }
  const imageTimeoutMs = options.imageTimeoutMs ?? 300_000
  return {
    start: (request) =>
      isOpenAIVideoModel(request.providerModel)
        ? createVideo(videos, request)
        : generateImages(api, baseUrl, headers, imageTimeoutMs, request),
    poll: (handle) => retrieveVideo(videos, handle),
    // OpenAI documents no way to stop a video in progress (DELETE only removes finished ones): the
    // generation runs to its end at OpenAI and the engine no longer asks about it.
    cancel: () => Effect.void,
    pollIntervalMs: options.pollIntervalMs ?? 10_000
  }
}
