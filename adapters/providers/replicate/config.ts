import { Config } from "effect"
import { baseUrlConfig, countConfig, millisConfig, optionalConfig, providerFromConfig, secretConfig } from "../configValues.js"
import { DEFAULT_MAX_CONNECTIONS } from "../providerHttp.js"
import { REPLICATE_BASE_URL, type ReplicateOptions, replicateProvider } from "./ReplicateProvider.js"

/**
 * Replicate's options from the environment: REPLICATE_API_TOKEN, REPLICATE_BASE_URL,
 * REPLICATE_WEBHOOK_SECRET (fetched from Replicate when absent), REPLICATE_POLL_INTERVAL_MS.
 * Also REPLICATE_MAX_CONNECTIONS: connections kept to each host of the API (default 64).
 */
export const replicateConfig: Config.Config<ReplicateOptions> = Config.all({
  apiToken: secretConfig("REPLICATE_API_TOKEN"),
  baseUrl: baseUrlConfig("REPLICATE_BASE_URL", REPLICATE_BASE_URL),
  webhookSecret: optionalConfig(secretConfig("REPLICATE_WEBHOOK_SECRET")),
  pollIntervalMs: millisConfig("REPLICATE_POLL_INTERVAL_MS", 2000),
  maxConnections: countConfig("REPLICATE_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS)
})

/** The Replicate provider when REPLICATE_API_TOKEN is set, else none. */
export const replicateProviderFromConfig = providerFromConfig("REPLICATE_API_TOKEN", replicateConfig, replicateProvider)
