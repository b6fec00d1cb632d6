import { Config } from "effect"
import { baseUrlConfig, countConfig, millisConfig, optionalConfig, providerFromConfig, secretConfig } from "../configValues.js"
import { DEFAULT_MAX_CONNECTIONS } from "../providerHttp.js"
import { OPENROUTER_BASE_URL, type OpenRouterOptions, openRouterProvider } from "./OpenRouterProvider.js"

/**
 * OpenRouter's options from the environment: OPENROUTER_API_KEY, OPENROUTER_BASE_URL,
 * OPENROUTER_WEBHOOK_SECRET (the workspace's signing secret: without it jobs are polled),
 * OPENROUTER_POLL_INTERVAL_MS.
 * Also OPENROUTER_MAX_CONNECTIONS: connections kept to each host of the API (default 64).
 */
export const openRouterConfig: Config.Config<OpenRouterOptions> = Config.all({
  apiKey: secretConfig("OPENROUTER_API_KEY"),
  baseUrl: baseUrlConfig("OPENROUTER_BASE_URL", OPENROUTER_BASE_URL),
  webhookSecret: optionalConfig(secretConfig("OPENROUTER_WEBHOOK_SECRET")),
  pollIntervalMs: millisConfig("OPENROUTER_POLL_INTERVAL_MS", 15_000),
  maxConnections: countConfig("OPENROUTER_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS)
})

/** The OpenRouter provider when OPENROUTER_API_KEY is set, else none. */
export const openRouterProviderFromConfig = providerFromConfig("OPENROUTER_API_KEY", openRouterConfig, openRouterProvider)
