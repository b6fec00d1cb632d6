/**
 * genjobs/providers/openrouter: OpenRouter's asynchronous video API (Veo, Seedance, Wan, ...
 * behind one endpoint: submitted, polled, downloaded with the key) as a generation provider,
 * with its signed callbacks. See docs/providers.md.
 */
export {
  OPENROUTER_BASE_URL,
  OPENROUTER_PROVIDER_ID,
  type OpenRouterOptions,
  openRouterProvider
} from "../../adapters/providers/openrouter/OpenRouterProvider.js"
export { openRouterConfig, openRouterProviderFromConfig } from "../../adapters/providers/openrouter/config.js"
