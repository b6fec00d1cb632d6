import { Config, Effect } from "effect"
import {
  baseUrlConfig,
  countConfig,
  invalidConfig,
  millisConfig,
  optionalConfig,
  providerFromConfig,
  secretConfig
} from "../configValues.js"
import { DEFAULT_MAX_CONNECTIONS } from "../providerHttp.js"
import { FAL_BASE_URL, type FalOptions, falProvider } from "./FalProvider.js"
import { parsePublicKeys } from "./webhookSignature.js"

/** FAL_WEBHOOK_PUBLIC_KEYS, refused at startup when it holds no usable Ed25519 key. */
const publicKeysConfig = Config.String("FAL_WEBHOOK_PUBLIC_KEYS").pipe(
  Config.mapEffect((text) =>
    Effect.try({
      try: () => (parsePublicKeys(text), text),
      catch: (error) => invalidConfig(`FAL_WEBHOOK_PUBLIC_KEYS: ${error instanceof Error ? error.message : "unreadable"}`)
    })
  )
)

/**
 * fal.ai's options from the environment: FAL_KEY, FAL_BASE_URL, FAL_WEBHOOK_PUBLIC_KEYS (without
 * them jobs are polled only), FAL_POLL_INTERVAL_MS.
 * Also FAL_MAX_CONNECTIONS: connections kept to each host of the API (default 64).
 */
export const falConfig: Config.Config<FalOptions> = Config.all({
  apiKey: secretConfig("FAL_KEY"),
  baseUrl: baseUrlConfig("FAL_BASE_URL", FAL_BASE_URL),
  webhookPublicKeys: optionalConfig(publicKeysConfig),
  pollIntervalMs: millisConfig("FAL_POLL_INTERVAL_MS", 2000),
  maxConnections: countConfig("FAL_MAX_CONNECTIONS", DEFAULT_MAX_CONNECTIONS)
})

/** The fal.ai provider when FAL_KEY is set, else none. */
export const falProviderFromConfig = providerFromConfig("FAL_KEY", falConfig, falProvider)
