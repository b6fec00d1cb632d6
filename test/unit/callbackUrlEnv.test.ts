import { ConfigProvider, Effect, Result } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv, engineOptionsFromEnv } from "../../entries/config.js"

const optionsOf = (env: Record<string, string>) =>
  engineOptionsFromEnv(
    Result.getOrThrow(Effect.runSync(Effect.result(EngineEnv.parse(ConfigProvider.fromEnv({ env }))))),
    { publicUrl: "http://127.0.0.1:3000", providers: {} }
  )

describe("the providers' callback address from the environment", () => {
  it("is none without PUBLIC_URL or PROVIDER_CALLBACK_URL: the default address is loopback, so providers are polled", () => {
    expect(optionsOf({}).settings?.publicUrl).toBeUndefined()
  })

  it("is PUBLIC_URL when it is set, without a trailing slash", () => {
    expect(optionsOf({ PUBLIC_URL: "https://jobs.genjobs.test/" }).settings?.publicUrl).toBe("https://jobs.genjobs.test")
  })

  it("is PROVIDER_CALLBACK_URL when set, whatever PUBLIC_URL says", () => {
    const options = optionsOf({ PUBLIC_URL: "http://internal:3000", PROVIDER_CALLBACK_URL: "https://hooks.genjobs.test/genjobs" })
    expect(options.settings?.publicUrl).toBe("https://hooks.genjobs.test/genjobs")
  })
})
