import { Effect, type Layer, Logger, Result } from "effect"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { DEMO_PROVIDER_ID, demoCatalog, makeDemoProvider, makeEngine } from "../../entries/index.js"
import { memoryFiles, memoryStore } from "../../entries/memory.js"
import { sqliteStore } from "../../entries/sqlite.js"
import type { RequestId } from "../../src/domain/ids.js"
import { isRefusal } from "../../src/domain/refusal.js"
import type { Engine, StorePorts } from "../../src/engine.js"
import { Admin } from "../../src/services/Admin.js"
import { Auth } from "../../src/services/Auth.js"
import { Catalog } from "../../src/services/Catalog.js"
import { Jobs } from "../../src/services/Jobs.js"
import { tempDataDir } from "../support/serverProcess.js"

const engines: Array<Engine> = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.dispose()))
})

const start = async (store: Layer.Layer<StorePorts, unknown>, catalog: unknown, logged?: Array<string>) => {
  const engine = await makeEngine({
    store,
    files: memoryFiles({ publicUrl: "http://files.test" }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    catalog,
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    ...(logged === undefined
      ? {}
      : { observability: Logger.layer([Logger.make(({ message }) => logged.push(String(message)))]) })
  })
  engines.push(engine)
  return engine
}

const revisionOf = (engine: Engine) => engine.run(Effect.map(Catalog.use((c) => c.snapshot), (s) => s.revision))

/** A submit of the demo's text model by a new account's key: its answer, or the refusal's code. */
const submitOnce = (engine: Engine) =>
  engine.run(Effect.gen(function*() {
    const admin = yield* Admin
    const account = yield* admin.createAccount({ name: "t", creditsMicroCents: 1_000_000, maxConcurrentJobs: 5, segments: [], allowedModels: [], discounts: [] })
    const key = yield* admin.createKey(account.id, { name: "k", scopes: [], allowedIPs: [], expiresAt: null })
    const caller = yield* (yield* Auth).authenticate({ authorization: `Bearer ${key.secret}` })
    const submitted = yield* Effect.result(
      (yield* Jobs).submit(caller, { model: "demo/text-gen/text-to-text", input: { prompt: "hi" } }, "req_t" as RequestId)
    )
    return Result.match(submitted, { onFailure: (error) => (isRefusal(error) ? error.code : error._tag), onSuccess: ({ job }) => job.status })
  }))

describe("makeEngine({ catalog })", () => {
  it("starts with the catalog it is given, and takes a first submit", async () => {
    const engine = await start(memoryStore(), demoCatalog)
    expect(await revisionOf(engine)).toBe(1)
    expect(await submitOnce(engine)).toBe("pending")
  })

  it("leaves the store's catalog as it is when it is the same, and replaces it when it is not", async () => {
    const file = join(tempDataDir(), "genjobs.db")
    await start(sqliteStore({ filename: file }), demoCatalog)
    await engines.pop()!.dispose()
    const again = await start(sqliteStore({ filename: file }), demoCatalog)
    expect(await revisionOf(again)).toBe(1)
    await engines.pop()!.dispose()
    const fewer = { ...demoCatalog, models: demoCatalog.models.slice(1) }
    expect(await revisionOf(await start(sqliteStore({ filename: file }), fewer))).toBe(2)
  })

  it("refuses to start with a catalog whose versions name only providers it was not given, naming them", async () => {
    const runway = {
      ...demoCatalog,
      providers: [...demoCatalog.providers, { id: "runway", name: "Runway", description: "", logoUrl: "", website: "", color: "#000000" }],
      models: [...demoCatalog.models, { ...demoCatalog.models[0]!, slug: "runway/gen4/text-to-image", providerId: "runway" }]
    }
    await expect(start(memoryStore(), runway)).rejects.toThrow(
      /not registered.*model "runway\/gen4\/text-to-image" version "v1": no registered provider \("runway"\); .* version "v2"/
    )
  })

  it("refuses to start with an invalid catalog, with its reasons", async () => {
    await expect(start(memoryStore(), { models: [{ slug: 42 }] })).rejects.toThrow(/catalog|VALIDATION|models/i)
  })

  it("without one, says once at the first refused submit that the catalog is empty and how to load one", async () => {
    const logged: Array<string> = []
    const engine = await start(memoryStore(), undefined, logged)
    expect(await submitOnce(engine)).toBe("MODEL_NOT_FOUND")
    expect(await submitOnce(engine)).toBe("MODEL_NOT_FOUND")
    const told = logged.filter((line) => line.includes("the catalog is empty"))
    expect(told).toHaveLength(1)
    expect(told[0]).toContain("demoCatalog")
  })
})
