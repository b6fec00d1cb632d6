import { ConfigProvider, Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv, engineOptionsFromEnv } from "../../entries/config.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(EngineEnv, ConfigProvider.fromMap(new Map(Object.entries(env))))))

const httpOf = (env: Record<string, string>) =>
  engineOptionsFromEnv(Either.getOrThrow(read(env)), { publicUrl: "http://localhost:3000", providers: {} }).http

describe("STORE_WAIT_MS", () => {
  it("bounds a request's wait for the store at 1 s unless set", () => {
    expect(httpOf({})?.storeWaitMs).toBe(1_000)
    expect(httpOf({ STORE_WAIT_MS: "250" })?.storeWaitMs).toBe(250)
  })

  it("refuses a bound under 1 ms, naming the variable", () => {
    for (const value of ["0", "-5", "soon"]) {
      const result = read({ STORE_WAIT_MS: value })
      expect(Either.isLeft(result) && String(result.left)).toContain("STORE_WAIT_MS")
    }
  })
})
