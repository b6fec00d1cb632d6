/**
 * genjobs/providers/fal: fal.ai's queue API as a generation provider, with its ED25519-signed
 * webhooks as callbacks. See docs/providers.md.
 */
export { FAL_BASE_URL, FAL_PROVIDER_ID, type FalOptions, falProvider } from "../../adapters/providers/fal/FalProvider.js"
export { falConfig, falProviderFromConfig } from "../../adapters/providers/fal/config.js"
export { parsePublicKeys as parseFalPublicKeys } from "../../adapters/providers/fal/webhookSignature.js"
