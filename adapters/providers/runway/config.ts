import { Config } from "effect"
import { baseUrlConfig, millisConfig, providerFromConfig, secretConfig } from "../configValues.js"
import { RUNWAY_API_VERSION, RUNWAY_BASE_URL, type RunwayOptions, runwayProvider } from "./RunwayProvider.js"

/**
 * Runway's options from the environment, as Runway's own SDKs read them: RUNWAYML_API_SECRET,
 * RUNWAYML_BASE_URL; and RUNWAY_API_VERSION (X-Runway-Version), RUNWAY_POLL_INTERVAL_MS.
 */
export const runwayConfig: Config.Config<RunwayOptions> = Config.all({
  apiSecret: secretConfig("RUNWAYML_API_SECRET"),
  baseUrl: baseUrlConfig("RUNWAYML_BASE_URL", RUNWAY_BASE_URL),
  apiVersion: Config.string("RUNWAY_API_VERSION").pipe(Config.withDefault(RUNWAY_API_VERSION)),
  pollIntervalMs: millisConfig("RUNWAY_POLL_INTERVAL_MS", 5_000)
})

/** The Runway provider when RUNWAYML_API_SECRET is set, else none. */
export const runwayProviderFromConfig = providerFromConfig("RUNWAYML_API_SECRET", runwayConfig, runwayProvider)
