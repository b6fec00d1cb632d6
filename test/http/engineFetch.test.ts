import { Layer, References } from "effect"
import { DEMO_PROVIDER_ID, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { describe, expect, it } from "vitest"

/**
 * `makeEngine`'s web handler is built on the first request (src/engine.ts): an engine that serves
 * no HTTP never builds it, and one that does answers its first requests as before.
 */
const ORIGIN = "http://host.test"
const start = () =>
  makeEngine({
    store: memoryStore(),
    files: memoryFiles({ publicUrl: ORIGIN }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    observability: Layer.succeed(References.MinimumLogLevel, "Error")
  })

describe("an engine's web handler, built on its first request", () => {
  it("answers requests that arrive together before it is built, each its own", async () => {
    const engine = await start()
    try {
      const [health, models, missing] = await Promise.all([
        engine.fetch(new Request(`${ORIGIN}/health`)),
        engine.fetch(new Request(`${ORIGIN}/v1/catalog/models`)),
        engine.fetch(new Request(`${ORIGIN}/v1/jobs/job_missing`))
      ])
      expect([health.status, models.status, missing.status]).toEqual([200, 200, 401])
      expect(Array.isArray(await models.json())).toBe(true)
    } finally {
      await engine.dispose()
    }
  })

  it("stops with no request asked, and refuses requests once disposed", async () => {
    const unused = await start()
    await unused.dispose()
    await expect(unused.fetch(new Request(`${ORIGIN}/health`))).rejects.toThrow(/disposed/)
    const used = await start()
    expect((await used.fetch(new Request(`${ORIGIN}/health`))).status).toBe(200)
    await used.dispose()
    await expect(used.fetch(new Request(`${ORIGIN}/health`))).rejects.toThrow(/disposed/)
  })
})
