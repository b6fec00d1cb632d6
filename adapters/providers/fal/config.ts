import { Config, ConfigError, Effect, Either, Option } from "effect"
import type { GenerationProvider } from "../../../src/ports/Provider.js"
import { FAL_BASE_URL, falProvider } from "./FalProvider.js"
import { parsePublicKeys } from "./webhookSignature.js"

/** FAL_WEBHOOK_PUBLIC_KEYS, refused at startup when it holds no usable Ed25519 key. */
const publicKeysConfig = Config.string("FAL_WEBHOOK_PUBLIC_KEYS").pipe(
  Config.mapOrFail((text) =>
    Either.try({ try: () => (parsePublicKeys(text), text), catch: (error) => error }).pipe(
      Either.mapLeft((error) =>
        ConfigError.InvalidData([], `FAL_WEBHOOK_PUBLIC_KEYS: ${error instanceof Error ? error.message : "unreadable"}`)
      )
    )
  )
)

/**
 * fal.ai's settings from the environment: FAL_KEY (required for the provider), FAL_BASE_URL
 * (default https://queue.fal.run), FAL_WEBHOOK_PUBLIC_KEYS (fal.ai's JWKS JSON or base64 Ed25519
 * keys; without them jobs are polled only), FAL_POLL_INTERVAL_MS (default 2000).
 */
export const falConfig = Config.all({
  apiKey: Config.redacted("FAL_KEY"),
  baseUrl: Config.string("FAL_BASE_URL").pipe(Config.withDefault(FAL_BASE_URL)),
  webhookPublicKeys: Config.option(publicKeysConfig),
  pollIntervalMs: Config.integer("FAL_POLL_INTERVAL_MS").pipe(Config.withDefault(2000))
})

/** The fal.ai provider when FAL_KEY is set, else none: the server registers it only then. */
export const falProviderFromConfig: Effect.Effect<Option.Option<GenerationProvider>, ConfigError.ConfigError> = Effect.gen(
  function*() {
    const key = yield* Config.option(Config.redacted("FAL_KEY"))
    if (Option.isNone(key)) return Option.none()
    const settings = yield* falConfig
    return Option.some(falProvider({
      apiKey: settings.apiKey,
      baseUrl: settings.baseUrl,
      webhookPublicKeys: Option.getOrUndefined(settings.webhookPublicKeys),
      pollIntervalMs: settings.pollIntervalMs
    }))
  }
)
