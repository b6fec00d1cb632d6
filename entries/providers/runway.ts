/**
 * genjobs/providers/runway: Runway's tasks API as a generation provider: tasks created at the
 * endpoint the catalog names (image_to_video, text_to_video, text_to_image, ...), polled, and
 * cancelled by deletion. See docs/providers.md.
 */
export {
  RUNWAY_API_VERSION,
  RUNWAY_BASE_URL,
  RUNWAY_PROVIDER_ID,
  type RunwayOptions,
  runwayProvider
} from "../../adapters/providers/runway/RunwayProvider.js"
export { runwayConfig, runwayProviderFromConfig } from "../../adapters/providers/runway/config.js"
export { RUNWAY_ENDPOINTS, type RunwayEndpoint } from "../../adapters/providers/runway/endpoints.js"
