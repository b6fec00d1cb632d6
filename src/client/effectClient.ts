import type { Effect } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { EngineApi } from "../http/Api.js"

/**
 * The engine's HttpApi as an Effect client: every group (`jobs`, `account`, `catalog`, `models`,
 * `uploads`, `webhooks`, `admin`, `changes`) with typed answers and typed error envelopes. It needs an
 * HttpClient: `FetchHttpClient.layer` anywhere, or a platform's own. Path parameters are sent as
 * given, so slugs go to the documented `{slug}` routes percent-encoded:
 * `models.get({ path: { modelId: encodeURIComponent(slug) } })`.
 */
export const makeEffectClient = (options: { readonly baseUrl: string; readonly apiKey: string }) =>
  HttpApiClient.make(EngineApi, {
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    transformClient: HttpClient.mapRequest(HttpClientRequest.bearerToken(options.apiKey))
  })

export type EffectClient = Effect.Success<ReturnType<typeof makeEffectClient>>
