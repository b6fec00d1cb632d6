/**
 * genjobs/providers/veo: Google's Veo video models through the Gemini API (long-running
 * operations: started, polled until done, their videos downloaded with the key) as a generation
 * provider. See docs/providers.md.
 */
export { VEO_BASE_URL, VEO_PROVIDER_ID, type VeoOptions, veoProvider } from "../../adapters/providers/veo/VeoProvider.js"
export { veoConfig, veoProviderFromConfig } from "../../adapters/providers/veo/config.js"
export { VEO_INSTANCE_FIELDS } from "../../adapters/providers/veo/request.js"
