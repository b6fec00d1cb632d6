/** Each adapter's settings from the environment, as the bundled server reads them. */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option, Redacted } from "effect"
import { falProviderFromConfig } from "genjobs/providers/fal"
import { OPENAI_BASE_URL, openaiConfig, openaiProviderFromConfig } from "genjobs/providers/openai"
import { OPENROUTER_BASE_URL, openRouterConfig, openRouterProviderFromConfig } from "genjobs/providers/openrouter"
import { replicateProviderFromConfig } from "genjobs/providers/replicate"
import { RUNWAY_API_VERSION, RUNWAY_BASE_URL, runwayConfig, runwayProviderFromConfig } from "genjobs/providers/runway"
import { VEO_BASE_URL, veoConfig, veoProviderFromConfig } from "genjobs/providers/veo"
import { configuredProviders } from "../../apps/server/providers.js"

/** The environment as the server reads its own (ConfigProvider.fromEnv). */
const withEnv = (env: Record<string, string>) => Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env, preserveEmptyStrings: true }))

describe("Config readers", () => {
  it.effect("register a provider only when its credential is set", () =>
    Effect.gen(function*() {
      for (
        const fromConfig of [
          replicateProviderFromConfig,
          falProviderFromConfig,
          openaiProviderFromConfig,
          runwayProviderFromConfig,
          veoProviderFromConfig,
          openRouterProviderFromConfig
        ]
      ) {
        expect(Option.isNone(yield* withEnv({})(fromConfig))).toBe(true)
      }
      const replicate = yield* withEnv({ REPLICATE_API_TOKEN: "r8_x", REPLICATE_POLL_INTERVAL_MS: "500" })(replicateProviderFromConfig)
      expect(Option.getOrThrow(replicate).pollIntervalMs).toBe(500)
      const fal = yield* withEnv({ FAL_KEY: "k" })(falProviderFromConfig)
      expect(Option.getOrThrow(fal).verifyCallback).toBeUndefined()
      expect(Option.isSome(yield* withEnv({ OPENAI_API_KEY: "sk-env" })(openaiProviderFromConfig))).toBe(true)
      expect(Option.isSome(yield* withEnv({ RUNWAYML_API_SECRET: "key_env" })(runwayProviderFromConfig))).toBe(true)
    }))

  it.effect("refuse FAL_WEBHOOK_PUBLIC_KEYS without a usable key", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(withEnv({ FAL_KEY: "k", FAL_WEBHOOK_PUBLIC_KEYS: "nonsense" })(falProviderFromConfig))
      expect(String(error)).toContain("FAL_WEBHOOK_PUBLIC_KEYS")
    }))

  it.effect("OpenAI: the provider's options, the key kept redacted", () =>
    Effect.gen(function*() {
      const options = yield* withEnv({ OPENAI_API_KEY: "sk-env", OPENAI_ORG_ID: "org-1" })(openaiConfig)
      expect([options.baseUrl, options.organization, options.project]).toEqual([OPENAI_BASE_URL, "org-1", undefined])
      expect(Redacted.isRedacted(options.apiKey) && Redacted.value(options.apiKey)).toBe("sk-env")
      expect(String(options.apiKey)).not.toContain("sk-env")
    }))

  it.effect("an empty credential or a base URL that is not http(s) is a configuration error", () =>
    Effect.gen(function*() {
      expect((yield* Effect.result(withEnv({ OPENAI_API_KEY: " " })(openaiProviderFromConfig)))._tag).toBe("Failure")
      expect((yield* Effect.result(withEnv({ OPENAI_API_KEY: "sk-env", OPENAI_BASE_URL: "api.openai.com" })(openaiProviderFromConfig)))._tag).toBe("Failure")
      expect((yield* Effect.result(withEnv({ REPLICATE_API_TOKEN: "" })(replicateProviderFromConfig)))._tag).toBe("Failure")
    }))

  it.effect("Runway: the provider's options with Runway's defaults", () =>
    Effect.gen(function*() {
      const options = yield* withEnv({ RUNWAYML_API_SECRET: "key_env" })(runwayConfig)
      expect([options.baseUrl, options.apiVersion]).toEqual([RUNWAY_BASE_URL, RUNWAY_API_VERSION])
      const custom = yield* withEnv({ RUNWAYML_API_SECRET: "key_env", RUNWAYML_BASE_URL: "http://127.0.0.1:4104" })(runwayConfig)
      expect(custom.baseUrl).toBe("http://127.0.0.1:4104")
    }))

  it.effect("Veo: GEMINI_API_KEY registers it, with the Gemini API's address and Google's poll pace", () =>
    Effect.gen(function*() {
      const options = yield* withEnv({ GEMINI_API_KEY: "AIza-env" })(veoConfig)
      expect([options.baseUrl, options.pollIntervalMs]).toEqual([VEO_BASE_URL, 10_000])
      expect(Redacted.isRedacted(options.apiKey) && Redacted.value(options.apiKey)).toBe("AIza-env")
      const provider = yield* withEnv({ GEMINI_API_KEY: "AIza-env", VEO_POLL_INTERVAL_MS: "2500" })(veoProviderFromConfig)
      expect(Option.getOrThrow(provider).pollIntervalMs).toBe(2500)
      expect((yield* Effect.result(withEnv({ GEMINI_API_KEY: "AIza-env", GEMINI_BASE_URL: "localhost:4105" })(veoProviderFromConfig)))._tag)
        .toBe("Failure")
    }))

  it.effect("OpenRouter: callbacks only with OPENROUTER_WEBHOOK_SECRET, which stays redacted", () =>
    Effect.gen(function*() {
      const options = yield* withEnv({ OPENROUTER_API_KEY: "sk-or-env", OPENROUTER_WEBHOOK_SECRET: "whs-env" })(openRouterConfig)
      expect(options.baseUrl).toBe(OPENROUTER_BASE_URL)
      expect(String(options.webhookSecret)).not.toContain("whs-env")
      const polled = yield* withEnv({ OPENROUTER_API_KEY: "sk-or-env" })(openRouterProviderFromConfig)
      expect(Option.getOrThrow(polled).verifyCallback).toBeUndefined()
      const called = yield* withEnv({ OPENROUTER_API_KEY: "sk-or-env", OPENROUTER_WEBHOOK_SECRET: "whs-env" })(openRouterProviderFromConfig)
      expect(Option.getOrThrow(called).verifyCallback).toBeDefined()
      expect((yield* Effect.result(withEnv({ OPENROUTER_API_KEY: "sk-or-env", OPENROUTER_WEBHOOK_SECRET: "" })(openRouterProviderFromConfig)))._tag)
        .toBe("Failure")
    }))

  it.effect("the bundled server registers Veo and OpenRouter under their ids from their keys alone", () =>
    Effect.gen(function*() {
      expect(Object.keys(yield* withEnv({ REPLICATE_API_TOKEN: "r8_x" })(configuredProviders))).toEqual(["replicate"])
      const both = yield* withEnv({ GEMINI_API_KEY: "AIza-env", OPENROUTER_API_KEY: "sk-or-env" })(configuredProviders)
      expect(Object.keys(both).sort()).toEqual(["openrouter", "veo"])
    }))
})
