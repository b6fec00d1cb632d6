import { DEMO_PROVIDER_ID, layerEngine, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { describe, expect, it } from "vitest"
import { engineOptionProblems } from "../../src/engine.js"

// What plain JavaScript can pass: the types are not there to stop it.
const untyped = (options: unknown) => options as Parameters<typeof makeEngine>[0]
const store = memoryStore()
const files = memoryFiles({ publicUrl: "http://host.test" })
const providers = { [DEMO_PROVIDER_ID]: makeDemoProvider() }

describe("makeEngine's options from plain JavaScript", () => {
  it("names every missing required option in one Error, before any Layer is built", async () => {
    const refused = makeEngine(untyped({ store }))
    await expect(refused).rejects.toThrow(TypeError)
    await expect(refused).rejects.toThrow(/files is missing: .*memoryFiles/)
    await expect(refused).rejects.toThrow(/providers is missing/)
    await expect(refused).rejects.not.toThrow(/store is missing/)
  })

  it("refuses no options at all, and each required option of the wrong kind", async () => {
    await expect(makeEngine(untyped(undefined))).rejects.toThrow(/the options must be an object, not undefined/)
    expect(engineOptionProblems({})).toEqual([
      expect.stringMatching(/^store is missing: .*memoryStore\(\)/),
      expect.stringMatching(/^files is missing/),
      expect.stringMatching(/^providers is missing/)
    ])
    expect(engineOptionProblems({ store: "sqlite", files, providers: [] })).toEqual([
      expect.stringMatching(/^store is not the stores, a Layer/),
      expect.stringMatching(/^providers is not the generation providers by the id/)
    ])
    expect(engineOptionProblems({ store, files: files, providers: store })).toEqual([expect.stringMatching(/^providers is not/)])
    expect(engineOptionProblems({ store, files, providers: { demo: undefined }, queue: {} })).toEqual([
      "queue, when given, must be a Layer",
      expect.stringMatching(/^providers\.demo is not a provider/)
    ])
  })

  it("throws from layerEngine at once, so an Effect program built from JavaScript fails there too", () => {
    expect(() => layerEngine(untyped({ files, providers }))).toThrow(/store is missing/)
  })

  it("accepts complete options, providers {} included", async () => {
    expect(engineOptionProblems({ store, files, providers })).toEqual([])
    expect(engineOptionProblems({ store, files, providers: {} })).toEqual([])
    const engine = await makeEngine({ store, files, providers, workers: 0, webhookDispatchers: 0 })
    try {
      expect((await engine.fetch(new Request("http://host.test/health"))).status).toBe(200)
    } finally {
      await engine.dispose()
    }
  })
})
