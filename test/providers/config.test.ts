/** Each adapter's settings from the environment, as the bundled server reads them. */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option, Redacted } from "effect"
import { falProviderFromConfig } from "genjobs/providers/fal"
import { OPENAI_BASE_URL, openaiConfig, openaiProviderFromConfig } from "genjobs/providers/openai"
import { replicateProviderFromConfig } from "genjobs/providers/replicate"
import { RUNWAY_API_VERSION, RUNWAY_BASE_URL, runwayConfig, runwayProviderFromConfig } from "genjobs/providers/runway"

const withEnv = (env: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("Config readers", () => {
  it.effect("register a provider only when its credential is set", () =>
    Effect.gen(function*() {
      for (const fromConfig of [replicateProviderFromConfig, falProviderFromConfig, openaiProviderFromConfig, runwayProviderFromConfig]) {
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
      expect((yield* Effect.either(withEnv({ OPENAI_API_KEY: " " })(openaiProviderFromConfig)))._tag).toBe("Left")
      expect((yield* Effect.either(withEnv({ OPENAI_API_KEY: "sk-env", OPENAI_BASE_URL: "api.openai.com" })(openaiProviderFromConfig)))._tag).toBe("Left")
      expect((yield* Effect.either(withEnv({ REPLICATE_API_TOKEN: "" })(replicateProviderFromConfig)))._tag).toBe("Left")
    }))

  it.effect("Runway: the provider's options with Runway's defaults", () =>
    Effect.gen(function*() {
      const options = yield* withEnv({ RUNWAYML_API_SECRET: "key_env" })(runwayConfig)
      expect([options.baseUrl, options.apiVersion]).toEqual([RUNWAY_BASE_URL, RUNWAY_API_VERSION])
      const custom = yield* withEnv({ RUNWAYML_API_SECRET: "key_env", RUNWAYML_BASE_URL: "http://127.0.0.1:4104" })(runwayConfig)
      expect(custom.baseUrl).toBe("http://127.0.0.1:4104")
    }))
})
