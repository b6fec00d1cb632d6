/** The pieces both adapters share: Retry-After, output types, data URLs, and the Config readers. */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Option } from "effect"
import { falProviderFromConfig } from "genjobs/providers/fal"
import { replicateProviderFromConfig } from "genjobs/providers/replicate"
import { retryAfterMs } from "../../adapters/providers/providerHttp.js"
import { outputTypeOf, urlOutput } from "../../adapters/providers/providerOutputs.js"
import { bytesOf } from "./support.js"

describe("Retry-After", () => {
  it("reads delta-seconds and HTTP dates, and nothing else", () => {
    const now = Date.parse("2026-01-01T00:00:00Z")
    expect(retryAfterMs("3", now)).toBe(3000)
    expect(retryAfterMs("Thu, 01 Jan 2026 00:00:10 GMT", now)).toBe(10_000)
    expect(retryAfterMs("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0)
    expect(retryAfterMs("soon", now)).toBeUndefined()
    expect(retryAfterMs(undefined, now)).toBeUndefined()
  })
})

describe("outputs", () => {
  it("takes an output's type from its content type or extension, else the declared type", () => {
    expect(outputTypeOf("video/mp4", "image")).toBe("video")
    expect(outputTypeOf(undefined, "audio")).toBe("audio")
    expect(urlOutput("https://x.test/a/out.webm?sig=1", "image")).toMatchObject({ type: "video", contentType: "video/webm" })
    expect(urlOutput("https://x.test/file", "audio")).toMatchObject({ type: "audio" })
  })

  it.effect("decodes data URLs into bytes, since nothing can fetch them", () =>
    Effect.gen(function*() {
      const output = urlOutput(`data:image/png;base64,${Buffer.from("png!").toString("base64")}`, "image")
      expect(output).toMatchObject({ type: "image", source: { _tag: "Bytes", contentType: "image/png" } })
      expect(new TextDecoder().decode(yield* bytesOf(output.source))).toBe("png!")
    }))
})

describe("Config readers", () => {
  const withEnv = (env: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

  it.effect("register a provider only when its credential is set", () =>
    Effect.gen(function*() {
      expect(Option.isNone(yield* withEnv({})(replicateProviderFromConfig))).toBe(true)
      expect(Option.isNone(yield* withEnv({})(falProviderFromConfig))).toBe(true)
      const replicate = yield* withEnv({ REPLICATE_API_TOKEN: "r8_x", REPLICATE_POLL_INTERVAL_MS: "500" })(replicateProviderFromConfig)
      expect(Option.getOrThrow(replicate).pollIntervalMs).toBe(500)
      const fal = yield* withEnv({ FAL_KEY: "k" })(falProviderFromConfig)
      expect(Option.getOrThrow(fal).verifyCallback).toBeUndefined()
    }))

  it.effect("refuse FAL_WEBHOOK_PUBLIC_KEYS without a usable key", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(withEnv({ FAL_KEY: "k", FAL_WEBHOOK_PUBLIC_KEYS: "nonsense" })(falProviderFromConfig))
      expect(String(error)).toContain("FAL_WEBHOOK_PUBLIC_KEYS")
    }))
})
