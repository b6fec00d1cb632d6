/**
 * genjobs/providers/replicate: Replicate's predictions API as a generation provider, with its
 * signed webhooks as callbacks. See docs/providers.md.
 */
export {
  MARKER_PARAM,
  REPLICATE_BASE_URL,
  REPLICATE_PROVIDER_ID,
  type ReplicateOptions,
  replicateProvider
} from "../../adapters/providers/replicate/ReplicateProvider.js"
export { replicateConfig, replicateProviderFromConfig } from "../../adapters/providers/replicate/config.js"
