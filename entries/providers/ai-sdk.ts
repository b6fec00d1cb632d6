/**
 * genjobs/providers/ai-sdk: Vercel AI SDK models (`@ai-sdk/provider` 4, an optional peer) as a
 * generation provider of the engine: any AI SDK provider package's image, video and speech
 * models under the engine's credits, limits, routes, webhooks and dashboard. See docs/ai-sdk.md.
 */
export { aiSdkProvider, type AiSdkProviderOptions, type Loose, type ModelSource } from "../../adapters/providers/aiSdk/AiSdkProvider.js"
export { pooledFetch, type PooledFetchOptions } from "../../adapters/providers/aiSdk/pooledFetch.js"
