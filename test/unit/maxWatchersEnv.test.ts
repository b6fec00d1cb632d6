import { ConfigProvider, Effect, Result } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv, engineOptionsFromEnv } from "../../entries/config.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(EngineEnv.parse(ConfigProvider.fromEnv({ env }))))

const optionsOf = (env: Record<string, string>) =>
  engineOptionsFromEnv(Result.getOrThrow(read(env)), { publicUrl: "http://localhost:3000", providers: {} })

describe("MAX_WATCHERS from the environment", () => {
  it("caps open streams and long-polls at 20,000 by default, and at what MAX_WATCHERS says", () => {
    expect(optionsOf({}).settings).toMatchObject({ maxWatchers: 20_000 })
    expect(optionsOf({ MAX_WATCHERS: "500" }).settings).toMatchObject({ maxWatchers: 500 })
  })

  it("refuses a cap of no watchers", () => {
    const result = read({ MAX_WATCHERS: "0" })
    expect(Result.isFailure(result) && String(result.failure)).toContain("MAX_WATCHERS")
  })
})
