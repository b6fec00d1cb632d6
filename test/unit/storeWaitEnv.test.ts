import { ConfigProvider, Effect, Result } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv, engineOptionsFromEnv } from "../../entries/config.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(EngineEnv.parse(ConfigProvider.fromEnv({ env }))))

const httpOf = (env: Record<string, string>) =>
  engineOptionsFromEnv(Result.getOrThrow(read(env)), { publicUrl: "http://localhost:3000", providers: {} }).http

describe("STORE_WAIT_MS", () => {
  it("bounds a request's wait for the store at 1 s unless set", () => {
    expect(httpOf({})?.storeWaitMs).toBe(1_000)
    expect(httpOf({ STORE_WAIT_MS: "250" })?.storeWaitMs).toBe(250)
  })

  it("takes 0 (shedding off) and refuses what is not a whole number of 0 or more, naming the variable", () => {
    expect(httpOf({ STORE_WAIT_MS: "0" })?.storeWaitMs).toBe(0)
    for (const value of ["-5", "soon", "1.5"]) {
      const result = read({ STORE_WAIT_MS: value })
      expect(Result.isFailure(result) && String(result.failure)).toContain("STORE_WAIT_MS")
    }
  })
})
