import { ConfigProvider, Effect, Result } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv, engineOptionsFromEnv } from "../../entries/config.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(EngineEnv.parse(ConfigProvider.fromEnv({ env }))))

const settingsOf = (env: Record<string, string>) =>
  engineOptionsFromEnv(Result.getOrThrow(read(env)), { publicUrl: "http://localhost:3000", providers: {} }).settings

describe("QUEUE_RELAY_INTERVAL_MS", () => {
  it("runs the relay's pass every 5 s unless set, apart from the reaper's interval", () => {
    expect(settingsOf({})?.queueRelayIntervalMs).toBe(5_000)
    expect(settingsOf({ QUEUE_RELAY_INTERVAL_MS: "250" })?.queueRelayIntervalMs).toBe(250)
  })

  it("refuses an interval under 100 ms, naming the variable", () => {
    for (const value of ["99", "0", "-5", "soon"]) {
      const result = read({ QUEUE_RELAY_INTERVAL_MS: value })
      expect(Result.isFailure(result) && String(result.failure)).toContain("QUEUE_RELAY_INTERVAL_MS")
    }
  })
})
