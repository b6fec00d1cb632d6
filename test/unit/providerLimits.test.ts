import { describe, expect, it } from "vitest"
import type { CatalogDocument } from "../../src/domain/catalog.js"
import { catalogProblems } from "../../src/domain/catalogRules.js"
import { candidateCounts, type LimitPlan, limitPlanOf, pickWithinLimits, roomsOf } from "../../src/domain/providerLimits.js"
import { sampleCatalog } from "../conformance/fixtures.js"

const IMAGE = "demo/image-gen/text-to-image"
const TEXT = "demo/text-gen/text-to-text"

/** The demo catalog with `limits` on its one provider, and the text model run as the provider model "llm". */
const limitedCatalog = (limits: NonNullable<CatalogDocument["providers"][number]["limits"]>): CatalogDocument => {
  const doc = sampleCatalog()
  return {
    ...doc,
    providers: doc.providers.map((p) => ({ ...p, limits })),
    models: doc.models.map((m) =>
      m.slug === TEXT ? { ...m, versions: m.versions.map((v) => ({ ...v, provider: { model: "llm" } })) } : m
    )
  }
}

describe("limit plans from the catalog", () => {
  it("puts every version of the provider's models in its scope, and a model's versions in the model's too", () => {
    const plan = limitPlanOf(limitedCatalog({ maxInFlight: 4, models: { llm: { startsPerMinute: 10 }, [IMAGE]: { maxInFlight: 1 } } }))
    const provider = JSON.stringify(["demo"])
    const llm = JSON.stringify(["demo", "llm"])
    const image = JSON.stringify(["demo", IMAGE])
    expect(plan.scopes).toEqual([
      { key: provider, maxInFlight: 4 },
      { key: llm, startsPerMinute: 10 },
      { key: image, maxInFlight: 1 }
    ])
    expect(plan.versions).toContainEqual({ model: TEXT, version: "v1", scopes: [provider, llm] })
    // A version without provider.model runs as the model's slug.
    expect(plan.versions).toContainEqual({ model: IMAGE, version: "v1", scopes: [provider, image] })
    expect(plan.versions).toContainEqual({ model: IMAGE, version: "v2", scopes: [provider, image] })
    expect(plan.versions).toHaveLength(sampleCatalog().models.flatMap((m) => m.versions).length)
  })

  it("has nothing to hold without limits, or with limits on models only", () => {
    expect(limitPlanOf(sampleCatalog())).toEqual({ scopes: [], versions: [] })
    const plan = limitPlanOf(limitedCatalog({ models: { llm: { maxInFlight: 2 } } }))
    expect(plan.versions).toEqual([{ model: TEXT, version: "v1", scopes: [JSON.stringify(["demo", "llm"])] }])
  })

  it("refuses a model limit that names no version's provider model", () => {
    expect(catalogProblems(limitedCatalog({ models: { llm: { maxInFlight: 1 } } }))).toEqual([])
    expect(catalogProblems(limitedCatalog({ models: { "lm": { maxInFlight: 1 } } }))).toEqual([
      "provider \"demo\": limits.models \"lm\" is the provider model of none of its versions"
    ])
  })
})

describe("limit plans of versions with routes", () => {
  const X = JSON.stringify(["x"])
  const Y = JSON.stringify(["y"])

  /** The demo catalog (its provider "demo" unlimited) with providers x and y, and the text model's version run on `routes`. */
  const routedCatalog = (routes: ReadonlyArray<{ readonly provider: string; readonly model?: string }>): CatalogDocument => {
    const doc = sampleCatalog()
    const demo = doc.providers[0]!
    return {
      ...doc,
      providers: [
        ...doc.providers,
        { ...demo, id: "x", name: "x", limits: { maxInFlight: 1, models: { "x-llm": { startsPerMinute: 5 } } } },
        { ...demo, id: "y", name: "y", limits: { maxInFlight: 2 } }
      ],
      models: doc.models.map((m) => (m.slug === TEXT ? { ...m, versions: m.versions.map((v) => ({ ...v, routes })) } : m))
    }
  }

  it("holds a version whose only route names provider x by x's maxInFlight, though the model's provider is another", () => {
    const doc = routedCatalog([{ provider: "x" }])
    expect(doc.models.find((m) => m.slug === TEXT)!.providerId).toBe("demo")
    const plan = limitPlanOf(doc)
    expect(plan.versions).toEqual([{ model: TEXT, version: "v1", scopes: [X] }])
    // One of its jobs in flight fills x: a claim takes no other.
    const rooms = roomsOf(plan, { inFlight: [{ model: TEXT, version: "v1", count: 1 }], starts: [] })
    expect(rooms.get(X)).toBe(0)
    expect(pickWithinLimits(plan, rooms, [{ model: TEXT, version: "v1" }], 10).picked).toEqual([])
    expect(pickWithinLimits(plan, roomsOf(plan, { inFlight: [], starts: [] }), [{ model: TEXT, version: "v1" }], 10).picked).toHaveLength(1)
  })

  it("counts a two-route version under both providers' limits, and under a limit on a route's own provider model", () => {
    const plan = limitPlanOf(routedCatalog([{ provider: "x", model: "x-llm" }, { provider: "y" }]))
    const xLlm = JSON.stringify(["x", "x-llm"])
    expect(plan.versions).toEqual([{ model: TEXT, version: "v1", scopes: [X, xLlm, Y] }])
    const rooms = roomsOf(plan, { inFlight: [{ model: TEXT, version: "v1", count: 1 }], starts: [{ scope: xLlm, count: 2 }] })
    expect([...rooms]).toEqual([[X, 0], [xLlm, 3], [Y, 1]])
    // Two candidates: x has room for one, so one is taken, and its start counts in every scope.
    const fresh = roomsOf(plan, { inFlight: [], starts: [] })
    const { picked, starts } = pickWithinLimits(plan, fresh, [{ model: TEXT, version: "v1" }, { model: TEXT, version: "v1" }], 10)
    expect(picked).toHaveLength(1)
    expect(starts).toEqual([{ scope: X, count: 1 }, { scope: xLlm, count: 1 }, { scope: Y, count: 1 }])
  })

  it("accepts a model limit that names a route's provider model", () => {
    expect(catalogProblems(routedCatalog([{ provider: "x", model: "x-llm" }]))).toEqual([])
    expect(catalogProblems(routedCatalog([{ provider: "x", model: "other" }]))).toEqual([
      "provider \"x\": limits.models \"x-llm\" is the provider model of none of its versions"
    ])
  })
})

describe("room and picks", () => {
  const plan: LimitPlan = {
    scopes: [{ key: "p", maxInFlight: 3 }, { key: "a", startsPerMinute: 2 }],
    versions: [{ model: "a", version: "v1", scopes: ["p", "a"] }, { model: "b", version: "v1", scopes: ["p"] }]
  }

  it("counts a scope's room from its versions in flight and its starts of the minute, never below 0", () => {
    const rooms = roomsOf(plan, {
      inFlight: [{ model: "a", version: "v1", count: 1 }, { model: "b", version: "v1", count: 1 }],
      starts: [{ scope: "a", count: 1 }]
    })
    expect([...rooms]).toEqual([["p", 1], ["a", 1]])
    expect([...roomsOf(plan, { inFlight: [{ model: "b", version: "v1", count: 9 }], starts: [{ scope: "a", count: 5 }] })]).toEqual([["p", 0], ["a", 0]])
  })

  it("reads per version no more candidates than its tightest scope has room for", () => {
    expect(candidateCounts(plan, new Map([["p", 3], ["a", 1]]), 10)).toEqual([
      { model: "a", version: "v1", limit: 1 },
      { model: "b", version: "v1", limit: 3 }
    ])
    expect(candidateCounts(plan, new Map([["p", 0], ["a", 2]]), 10)).toEqual([])
    expect(candidateCounts(plan, new Map([["p", 3], ["a", 2]]), 1)).toEqual([
      { model: "a", version: "v1", limit: 1 },
      { model: "b", version: "v1", limit: 1 }
    ])
  })

  it("takes candidates oldest first while all their scopes have room, and counts the starts per scope", () => {
    const candidates = [
      { id: 1, model: "a", version: "v1" },
      { id: 2, model: "a", version: "v1" },
      { id: 3, model: "b", version: "v1" },
      { id: 4, model: "b", version: "v1" }
    ]
    const { picked, starts } = pickWithinLimits(plan, new Map([["p", 2], ["a", 1]]), candidates, 10)
    expect(picked.map((c) => c.id)).toEqual([1, 3])
    expect(starts).toEqual([{ scope: "p", count: 2 }, { scope: "a", count: 1 }])
    expect(pickWithinLimits(plan, new Map([["p", 3], ["a", 2]]), candidates, 1).picked.map((c) => c.id)).toEqual([1])
  })
})
