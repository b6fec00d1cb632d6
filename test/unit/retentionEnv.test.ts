import { ConfigProvider, Effect, Result } from "effect"
import { describe, expect, it } from "vitest"
import { EngineEnv, engineOptionsFromEnv } from "../../entries/config.js"

const read = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(EngineEnv.parse(ConfigProvider.fromEnv({ env }))))

const optionsOf = (env: Record<string, string>) =>
  engineOptionsFromEnv(Result.getOrThrow(read(env)), { publicUrl: "http://localhost:3000", providers: {} })

describe("retention from the environment", () => {
  it("keeps every job unless JOB_RETENTION_DAYS is set, and sweeps in every process by default", () => {
    const options = optionsOf({})
    expect(options.settings).toMatchObject({ jobRetentionMs: null, retentionSweepIntervalMs: 60_000, retentionBatchSize: 100 })
    expect(options.retentionSweeper).toBe(true)
  })

  it("reads the retention in days, the interval, the batch size and the per-process switch", () => {
    const options = optionsOf({
      JOB_RETENTION_DAYS: "30",
      RETENTION_SWEEP_INTERVAL_MS: "300000",
      RETENTION_BATCH_SIZE: "500",
      RETENTION_SWEEPER: "false"
    })
    expect(options.settings).toMatchObject({ jobRetentionMs: 30 * 24 * 60 * 60 * 1000, retentionSweepIntervalMs: 300_000, retentionBatchSize: 500 })
    expect(options.retentionSweeper).toBe(false)
  })

  it("refuses a retention of no days, a busy interval and an empty batch", () => {
    for (const env of [{ JOB_RETENTION_DAYS: "0" }, { RETENTION_SWEEP_INTERVAL_MS: "10" }, { RETENTION_BATCH_SIZE: "0" }]) {
      const result = read(env)
      expect(Result.isFailure(result) && String(result.failure)).toContain(Object.keys(env)[0])
    }
  })
})
