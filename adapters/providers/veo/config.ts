import { Config } from "effect"
import { baseUrlConfig, countConfig, millisConfig, providerFromConfig, secretConfig } from "../configValues.js"
import { DEFAULT_MAX_CONNECTIONS } from "../providerHttp.js"
import { VEO_BASE_URL, type VeoOptions, veoProvider } from "./VeoProvider.js"

/**
 * Veo's options from the environment: GEMINI_API_KEY (the name Google's own SDKs read),
 * GEMINI_BASE_URL, VEO_POLL_INTERVAL_MS.
 * Also VEO_MAX_CONNECTIONS: connections kept to each host of the API (default 64).
 */
export const veoConfig: Config.Config<VeoOptions> = Config.all({
  apiKey: secretConfig("GEMINI_API_KEY"),
  baseUrl: baseUrlConfig("GEMINI_BASE_URL", VEO_BASE_URL),
  pollIntervalMs: millisConfig("VEO_POLL_INTERVAL_MS", 10_000),
  maxConnections: countConfig("VEO_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS)
})

/** The Veo provider when GEMINI_API_KEY is set, else none. */
export const veoProviderFromConfig = providerFromConfig("GEMINI_API_KEY", veoConfig, veoProvider)
