import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { ModelVersion, routesOf } from "../../src/domain/catalog.js"
import { routeOrder } from "../../src/domain/providerRoutes.js"

const model = { slug: "acme/video", providerId: "replicate" }
const version = (extra: Record<string, unknown>) =>
  Schema.decodeUnknownSync(ModelVersion)({
    versionId: "v1",
    status: "active",
    inputSchema: {},
    outputSchema: {},
    pricing: { baseCredits: 1, unit: "job" },
    rateLimits: { requestsPerMinute: 10, requestsPerDay: 100 },
    ...extra
  })

describe("routesOf", () => {
  it("without routes, a version runs on the model's provider with its provider mapping: today's catalogs unchanged", () => {
    expect(routesOf(model, version({ provider: { model: "acme/video:abc", input: { prompt: "$.text" } } }))).toEqual([
      { index: 0, providerId: "replicate", model: "acme/video:abc", mapping: { model: "acme/video:abc", input: { prompt: "$.text" } }, weight: undefined }
    ])
    expect(routesOf(model, version({}))).toMatchObject([{ providerId: "replicate", model: "acme/video", mapping: {} }])
  })

  it("with routes, each route names its provider, model (default the slug) and input mapping, in the catalog's order", () => {
    const routes = routesOf(model, version({
      routes: [{ provider: "fal", model: "fal-ai/video", input: { prompt: "$.text" } }, { provider: "replicate", weight: 2 }]
    }))
    expect(routes).toEqual([
      { index: 0, providerId: "fal", model: "fal-ai/video", mapping: { input: { prompt: "$.text" } }, weight: undefined },
      { index: 1, providerId: "replicate", model: "acme/video", mapping: {}, weight: 2 }
    ])
  })

  it("refuses an empty route list and a weight that is not positive", () => {
    expect(() => version({ routes: [] })).toThrow()
    expect(() => version({ routes: [{ provider: "fal", weight: 0 }] })).toThrow()
    expect(() => version({ routes: [{ provider: "" }] })).toThrow()
  })
})

describe("routeOrder", () => {
  const routes = routesOf(model, version({
    routes: [{ provider: "a" }, { provider: "b", weight: 3 }, { provider: "c", weight: 1 }, { provider: "d" }]
  }))

  it("keeps unweighted routes in place and each job's order is the same on every attempt", () => {
    for (const seed of ["job_1", "job_2", "job_3"]) {
      const order = routeOrder(routes, seed).map((r) => r.providerId)
      expect(order[0]).toBe("a")
      expect(order[3]).toBe("d")
      expect(new Set(order.slice(1, 3))).toEqual(new Set(["b", "c"]))
      expect(routeOrder(routes, seed)).toEqual(routeOrder(routes, seed))
    }
  })

  it("puts a route of weight 3 first in its rank about three times as often as one of weight 1", () => {
    let bFirst = 0
    const jobs = 4_000
    for (let i = 0; i < jobs; i++) if (routeOrder(routes, `job_${i}`)[1]!.providerId === "b") bFirst++
    expect(bFirst / jobs).toBeGreaterThan(0.7)
    expect(bFirst / jobs).toBeLessThan(0.8)
  })
})
