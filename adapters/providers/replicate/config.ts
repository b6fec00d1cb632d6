import { Config, type ConfigError, Effect, Option } from "effect"
import type { GenerationProvider } from "../../../src/ports/Provider.js"
import { REPLICATE_BASE_URL, replicateProvider } from "./ReplicateProvider.js"

/**
 * Replicate's settings from the environment: REPLICATE_API_TOKEN (required for the provider),
 * REPLICATE_BASE_URL (default https://api.replicate.com), REPLICATE_WEBHOOK_SECRET (whsec_...;
 * fetched from Replicate when absent), REPLICATE_POLL_INTERVAL_MS (default 2000).
 */
export const replicateConfig = Config.all({
  apiToken: Config.redacted("REPLICATE_API_TOKEN"),
  baseUrl: Config.string("REPLICATE_BASE_URL").pipe(Config.withDefault(REPLICATE_BASE_URL)),
  webhookSecret: Config.option(Config.redacted("REPLICATE_WEBHOOK_SECRET")),
  pollIntervalMs: Config.integer("REPLICATE_POLL_INTERVAL_MS").pipe(Config.withDefault(2000))
})

/** The Replicate provider when REPLICATE_API_TOKEN is set, else none: the server registers it only then. */
export const replicateProviderFromConfig: Effect.Effect<Option.Option<GenerationProvider>, ConfigError.ConfigError> =
  Effect.gen(function*() {
    const token = yield* Config.option(Config.redacted("REPLICATE_API_TOKEN"))
    if (Option.isNone(token)) return Option.none()
    const settings = yield* replicateConfig
    return Option.some(replicateProvider({
      apiToken: settings.apiToken,
      baseUrl: settings.baseUrl,
      webhookSecret: Option.getOrUndefined(settings.webhookSecret),
      pollIntervalMs: settings.pollIntervalMs
    }))
  })
