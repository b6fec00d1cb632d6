import { Config } from "effect"
import { baseUrlConfig, countConfig, millisConfig, providerFromConfig, secretConfig } from "../configValues.js"
import { DEFAULT_MAX_CONNECTIONS } from "../providerHttp.js"
import { RUNWAY_API_VERSION, RUNWAY_BASE_URL, type RunwayOptions, runwayProvider } from "./RunwayProvider.js"

/**
 * Runway's options from the environment, as Runway's own SDKs read them: RUNWAYML_API_SECRET,
 * RUNWAYML_BASE_URL; and RUNWAY_API_VERSION (X-Runway-Version), RUNWAY_POLL_INTERVAL_MS.
 * Also RUNWAY_MAX_CONNECTIONS: connections kept to each host of the API (default 64).
 */
export const runwayConfig: Config.Config<RunwayOptions> = Config.all({
  apiSecret: secretConfig("RUNWAYML_API_SECRET"),
  baseUrl: baseUrlConfig("RUNWAYML_BASE_URL", RUNWAY_BASE_URL),
  apiVersion: Config.String("RUNWAY_API_VERSION").pipe(Config.withDefault(RUNWAY_API_VERSION)),
  pollIntervalMs: millisConfig("RUNWAY_POLL_INTERVAL_MS", 5_000),
  maxConnections: countConfig("RUNWAY_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS)
})

/** The Runway provider when RUNWAYML_API_SECRET is set, else none. */
export const runwayProviderFromConfig = providerFromConfig("RUNWAYML_API_SECRET", runwayConfig, runwayProvider)
