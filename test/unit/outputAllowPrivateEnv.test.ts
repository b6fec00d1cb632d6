import { ConfigProvider, Effect, Result } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv, engineOptionsFromEnv } from "../../entries/config.js"

const settingsOf = (env: Record<string, string>) =>
  engineOptionsFromEnv(
    Result.getOrThrow(Effect.runSync(Effect.result(EngineEnv.parse(ConfigProvider.fromEnv({ env }))))),
    { publicUrl: "http://127.0.0.1:3000", providers: {} }
  ).settings

describe("PROVIDER_OUTPUT_ALLOW_PRIVATE", () => {
  it("is off unless set: output downloads keep to public addresses", () => {
    expect(settingsOf({})?.providerOutputAllowPrivate).toBe(false)
    expect(settingsOf({ WEBHOOK_ALLOW_PRIVATE: "1" })?.providerOutputAllowPrivate).toBe(false)
  })

  it("turns the engine's opt-in on", () => {
    expect(settingsOf({ PROVIDER_OUTPUT_ALLOW_PRIVATE: "1" })?.providerOutputAllowPrivate).toBe(true)
    expect(settingsOf({ PROVIDER_OUTPUT_ALLOW_PRIVATE: "true" })?.providerOutputAllowPrivate).toBe(true)
  })
})
