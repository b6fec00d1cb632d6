import { ConfigProvider, Effect, Result } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv } from "../../entries/config.js"
import { settingRefusalText } from "../../entries/settingChecks.js"

/** The environment as the bundled server reads it: a variable set to "" is a value. */
const refusal = (env: Record<string, string>) => {
  const result = Effect.runSync(Effect.result(EngineEnv.parse(ConfigProvider.fromEnv({ env, preserveEmptyStrings: true }))))
  return Result.isFailure(result) ? settingRefusalText(result.failure) : undefined
}

describe("a setting the environment got wrong stops the start with its own rule", () => {
  it("says the rule of the variable, in the words the docs use", () => {
    expect(refusal({ WORKER_CONCURRENCY: "-1" })).toBe("WORKER_CONCURRENCY must be a whole number of 0 or more")
    expect(refusal({ JOB_LEASE_MS: "500" })).toBe("JOB_LEASE_MS must be at least 1000")
    expect(refusal({ RETENTION_BATCH_SIZE: "20000" })).toBe("RETENTION_BATCH_SIZE must be from 1 to 10000")
  })

  it("passes a parser's own reason on: ADMIN_TOKENS names the entry at fault", () => {
    expect(refusal({ ADMIN_TOKENS: "ops:secret,ops:other" })).toBe(`ADMIN_TOKENS: "ops" appears twice`)
  })

  it("refuses a variable set to nothing rather than taking it for unset", () => {
    expect(refusal({ JOB_LEASE_MS: "" })).toBeDefined()
    expect(refusal({})).toBeUndefined()
  })
})
