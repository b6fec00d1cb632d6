import { Effect } from "effect"
import { type GenerationProvider, ProviderRejected } from "../../../src/ports/Provider.js"
import { type CredentialsOption, credentialSet } from "../credentials.js"
import { apiRoot, connectionPool } from "../providerHttp.js"
import { openAIApi } from "./api.js"
import { generateImages } from "./images.js"

/** The provider id catalogs name for OpenAI models. */
export const OPENAI_PROVIDER_ID = "openai"
export const OPENAI_BASE_URL = "https://api.openai.com/v1"

export interface OpenAIOptions {
  /**
   * An API key (sk-...), or several (comma-separated, or a list of keys or of `{ id?, secret,
   * weight? }`): each job is generated with the one the engine chose for it. Sent only to
   * `baseUrl`, never logged.
   */
  readonly apiKey: CredentialsOption
  /** The API root, with its version. Default https://api.openai.com/v1; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /** Sent as OpenAI-Organization. */
  readonly organization?: string | undefined
  /** Sent as OpenAI-Project. */
  readonly project?: string | undefined
  /** The longest wait for an Images API answer, which holds the generation itself. Default 5 min. */
  readonly imageRequestTimeoutMs?: number | undefined
  /**
   * Connections kept open to each host of the API, at most (default 64): requests beyond them
   * wait their turn, and that wait does not count against the request's timeout.
   */
  readonly maxConnections?: number | undefined
}

/** OpenAI removed the Videos API and the Sora 2 models on 2026-09-24. */
const VIDEOS_RETIRED =
  "OpenAI removed the Videos API and the Sora models on 2026-09-24: run video models through the veo or openrouter provider instead"

/** Sora models were served only by the retired Videos API. */
const isSoraModel = (model: string): boolean => /^sora(-|$)/.test(model)

/**
 * OpenAI's Images API (gpt-image-1, dall-e-3, ...) as a generation provider: each picture comes
 * back within the start call, so nothing is ever polled. No request is retried here: the engine
 * retries what comes back retryable.
 */
export const openaiProvider = (options: OpenAIOptions): GenerationProvider => {
  const keys = credentialSet("OpenAI", options.apiKey)
  const baseUrl = apiRoot(options.baseUrl ?? OPENAI_BASE_URL)
  const api = { ...openAIApi(...keys.secrets), connections: connectionPool(options.maxConnections) }
  const headersWith = (apiKey: string): Record<string, string> => ({
    authorization: `Bearer ${apiKey}`,
    ...(options.organization === undefined ? {} : { "openai-organization": options.organization }),
    ...(options.project === undefined ? {} : { "openai-project": options.project })
  })
  const imageTimeoutMs = options.imageRequestTimeoutMs ?? 300_000
  return {
    ...(keys.credentials === undefined ? {} : { credentials: keys.credentials }),
    // The pictures come back inline or as signed URLs that need no key, so the start is the only call with one.
    start: (request) =>
      isSoraModel(request.providerModel)
        ? Effect.fail(new ProviderRejected({ message: VIDEOS_RETIRED, retryable: false }))
        : Effect.flatMap(keys.secretFor(request.credentialId), (apiKey) =>
          generateImages(api, baseUrl, headersWith(apiKey), imageTimeoutMs, request)),
    // Only a video started before the retirement has a handle: it can no longer be fetched.
    poll: () => Effect.fail(new ProviderRejected({ message: VIDEOS_RETIRED, retryable: false })),
    cancel: () => Effect.void
  }
}
