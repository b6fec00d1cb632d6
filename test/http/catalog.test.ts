import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { compileSchema } from "../../src/domain/jsonSchema.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const IMAGE = "demo/image-gen/text-to-image"
const PRO = "demo/image-gen-pro/text-to-image"
const PRIVATE = "demo/text-gen-private/text-to-text"
const PUBLIC_SLUGS = ["demo/image-gen/text-to-image", "demo/video-gen/text-to-video", "demo/audio-gen/text-to-audio", "demo/text-gen/text-to-text"]

/** The demo catalog has capability variants: demo/image-gen/{text,image}-to-image. */
const catalogWithVariant = demoCatalog

const expectError = (reply: { status: number; body: any }, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
}

describe("public catalog", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
    expect((await engine.admin("PUT", "/admin/catalog", catalogWithVariant())).status).toBe(200)
  })
  afterAll(() => engine.dispose())

  it("lists public models for anonymous callers, with list prices", async () => {
    const reply = await engine.request("GET", "/v1/catalog/models")
    expect(reply.status).toBe(200)
    expect(reply.body.map((m: any) => m.slug)).toEqual([...PUBLIC_SLUGS, "demo/image-gen/image-to-image", "demo/video-gen/image-to-video"])
    expect(reply.body.map((m: any) => m.slug)).not.toContain(PRO)
    expect(reply.body.map((m: any) => m.slug)).not.toContain(PRIVATE)
    expect(reply.body[0]).toEqual({
      slug: IMAGE,
      provider: { id: "demo", name: "Demo provider", logoUrl: expect.stringMatching(/^data:image\/svg\+xml,/) },
      category: "image",
      capability: "text-to-image",
      pricing: { baseCredits: 5, unit: "per_generation" },
      tags: ["demo", "fast"],
      ratings: { average: 4.2, count: 12 }
    })
  })

  it("opens segment models to the segment and private models to accounts that list them", async () => {
    const pro = await engine.account({ segments: ["pro"] })
    const insider = await engine.account({ allowedModels: [PRIVATE] })
    const slugs = async (key: string) =>
      (await engine.request("GET", "/v1/catalog/models", { headers: { authorization: `Bearer ${key}` } })).body.map((m: any) => m.slug)
    expect(await slugs(pro.key)).toContain(PRO)
    expect(await slugs(pro.key)).not.toContain(PRIVATE)
    expect(await slugs(insider.key)).toContain(PRIVATE)
    expect(await slugs(insider.key)).not.toContain(PRO)
  })

  it("prices for the account: discount applied, list price beside it", async () => {
    const vip = await engine.account({ discounts: [{ type: "vip", percentage: 20 }] })
    const reply = await engine.request("GET", "/v1/catalog/models", { headers: { authorization: `Bearer ${vip.key}` } })
    expect(reply.body.find((m: any) => m.slug === IMAGE).pricing).toEqual({
      baseCredits: 4,
      unit: "per_generation",
      listBaseCredits: 5,
      discount: { type: "vip", percentage: 20 }
    })
  })

  it("answers 401 for a present but invalid key instead of an anonymous view", async () => {
    expectError(await engine.request("GET", "/v1/catalog/models", { headers: { authorization: "Bearer gjk_nope" } }), 401, "INVALID_API_KEY")
  })

  it("resolves slugs with slashes: provider/model gives the default variant, siblings list the others", async () => {
    const byModel = await engine.request("GET", "/v1/catalog/models/demo/image-gen")
    expect(byModel.status).toBe(200)
    expect(byModel.body).toMatchObject({ slug: IMAGE, capability: "text-to-image", name: "Demo Image" })
    expect(byModel.body.inputSchema.required).toEqual(["prompt"])
    expect(byModel.body.siblings).toEqual([{ slug: "demo/image-gen/image-to-image", capability: "image-to-image" }])
    const variant = await engine.request("GET", "/v1/catalog/models/demo/image-gen/image-to-image")
    expect(variant.body).toMatchObject({ slug: "demo/image-gen/image-to-image", siblings: [{ slug: IMAGE, capability: "text-to-image" }] })
  })

  it("answers hidden models exactly like unknown ones", async () => {
    const hidden = await engine.request("GET", `/v1/catalog/models/${PRO}`)
    const unknown = await engine.request("GET", "/v1/catalog/models/demo/nothing/text-to-image")
    expectError(hidden, 404, "MODEL_NOT_FOUND")
    expectError(unknown, 404, "MODEL_NOT_FOUND")
    expect(hidden.body.error.message.replace(PRO, "X")).toBe(unknown.body.error.message.replace("demo/nothing/text-to-image", "X"))
    const pro = await engine.account({ segments: ["pro"] })
    expect((await engine.request("GET", `/v1/catalog/models/${PRO}`, { headers: { authorization: `Bearer ${pro.key}` } })).status).toBe(200)
  })

  it("lists providers with the caller's model count, and provider detail", async () => {
    const anonymous = await engine.request("GET", "/v1/catalog/providers")
    expect(anonymous.body).toEqual([expect.objectContaining({ id: "demo", modelCount: 6, color: "#111827" })])
    const pro = await engine.account({ segments: ["pro"] })
    const personal = await engine.request("GET", "/v1/catalog/providers", { headers: { authorization: `Bearer ${pro.key}` } })
    expect(personal.body[0].modelCount).toBe(7)
    const detail = await engine.request("GET", "/v1/catalog/providers/demo")
    expect(detail.body.models).toHaveLength(6)
    expect(detail.body.models[0]).toEqual(expect.objectContaining({ slug: IMAGE, name: "Demo Image", pricing: { baseCredits: 5, unit: "per_generation" } }))
    expectError(await engine.request("GET", "/v1/catalog/providers/nobody"), 404, "NOT_FOUND")
  })

  it("excludes providers without visible models", async () => {
    const doc = catalogWithVariant()
    doc.providers.push({ id: "empty", name: "Empty", description: "", logoUrl: "", website: "", color: "#000000" })
    expect((await engine.admin("PUT", "/admin/catalog", doc)).status).toBe(200)
    expect((await engine.request("GET", "/v1/catalog/providers")).body.map((p: any) => p.id)).toEqual(["demo"])
    expectError(await engine.request("GET", "/v1/catalog/providers/empty"), 404, "NOT_FOUND")
  })

  it("counts category models per caller and sorts capability groups by order", async () => {
    const categories = await engine.request("GET", "/v1/catalog/categories")
    expect(Object.fromEntries(categories.body.map((c: any) => [c.id, c.modelCount]))).toEqual({ video: 2, image: 2, audio: 1, text: 1 })
    const insider = await engine.account({ allowedModels: [PRIVATE] })
    const personal = await engine.request("GET", "/v1/catalog/categories", { headers: { authorization: `Bearer ${insider.key}` } })
    expect(personal.body.find((c: any) => c.id === "text").modelCount).toBe(2)
    const groups = await engine.request("GET", "/v1/catalog/capability-groups")
    expect(groups.body.map((g: any) => g.id)).toEqual(["text-to-video", "text-to-image", "text-to-audio", "text-to-text", "image-to-image", "image-to-video"])
    expect(groups.body[4]).toEqual({ id: "image-to-image", displayName: "Image to image", label: "I2I", icon: "wand", color: "#0ea5e9", order: 5 })
  })
})

describe("key-protected models and providers", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
    const doc = demoCatalog()
    const image = doc.models.find((m) => m.slug === IMAGE)!
    image.versions.push({ ...image.versions[1], versionId: "v0", status: "deleted" })
    expect((await engine.admin("PUT", "/admin/catalog", doc)).status).toBe(200)
  })
  afterAll(() => engine.dispose())

  it("needs a key with list_models, by x-api-key or Bearer", async () => {
    expectError(await engine.request("GET", "/v1/models"), 401, "UNAUTHORIZED")
    const submitter = await engine.account({ scopes: ["submit_job"] })
    expectError(await engine.request("GET", "/v1/models", { headers: { "x-api-key": submitter.key } }), 403, "OPERATION_NOT_ALLOWED")
    const lister = await engine.account({ scopes: ["list_models"] })
    expect((await engine.request("GET", "/v1/models", { headers: { "x-api-key": lister.key } })).status).toBe(200)
    expect((await lister.get("/v1/models")).status).toBe(200)
  })

  it("lists models without deleted versions in versionCount", async () => {
    const acc = await engine.account()
    const reply = await acc.get("/v1/models")
    const image = reply.body.models.find((m: any) => m.id === IMAGE)
    expect(image).toEqual({
      id: IMAGE,
      providerId: "demo",
      providerName: "Demo provider",
      name: "Demo Image",
      description: "Draws a deterministic PNG from the prompt",
      category: "image",
      currentVersion: "v2",
      versionCount: 2,
      currentVersionPricing: { baseCredits: 5, unit: "per_generation" }
    })
    expect(reply.body.models.map((m: any) => m.id)).not.toContain(PRO)
  })

  it("shows a model's versions with status, schemas, pricing and rate limits, but not deleted ones", async () => {
    const acc = await engine.account()
    const reply = await acc.get(`/v1/models/${IMAGE}`)
    expect(reply.status).toBe(200)
    expect(reply.body.versions.map((v: any) => [v.versionId, v.status])).toEqual([["v1", "deprecated"], ["v2", "active"]])
    expect(reply.body.versions[1]).toMatchObject({
      pricing: { baseCredits: 5, unit: "per_generation" },
      rateLimits: { requestsPerMinute: 60, requestsPerDay: 10000 },
      inputSchema: { type: "object" },
      outputSchema: { type: "object" }
    })
    expectError(await acc.get("/v1/models/demo/nothing"), 404, "MODEL_NOT_FOUND")
    expectError(await acc.get(`/v1/models/${PRO}`), 404, "MODEL_NOT_FOUND")
  })

  it("lists providers with categories and their models", async () => {
    const acc = await engine.account()
    const providers = await acc.get("/v1/providers")
    expect(providers.body.providers).toEqual([
      expect.objectContaining({ id: "demo", isActive: true, categories: ["image", "video", "audio", "text"] })
    ])
    const models = await acc.get("/v1/providers/demo/models")
    expect(models.body.provider.id).toBe("demo")
    expect(models.body.models).toHaveLength(6)
    expectError(await acc.get("/v1/providers/nobody/models"), 404, "NOT_FOUND")
  })

  it("caches for 5 minutes, answers If-None-Match with 304, and a catalog change invalidates at once", async () => {
    const acc = await engine.account()
    const first = await acc.get("/v1/models")
    expect(first.headers.get("cache-control")).toBe("private, max-age=300")
    const etag = first.headers.get("etag")!
    expect(etag).toMatch(/^".+"$/)
    const again = await acc.get("/v1/models", { "if-none-match": etag })
    expect(again.status).toBe(304)
    expect(again.body).toBe("")
    expect((await acc.get("/v1/providers", { "if-none-match": etag })).status).toBe(200)

    const doc = demoCatalog()
    doc.models.find((m) => m.slug === IMAGE)!.name = "Renamed Image"
    expect((await engine.admin("PUT", "/admin/catalog", doc)).status).toBe(200)
    const changed = await acc.get("/v1/models", { "if-none-match": etag })
    expect(changed.status).toBe(200)
    expect(changed.headers.get("etag")).not.toBe(etag)
    expect(changed.body.models.find((m: any) => m.id === IMAGE).name).toBe("Renamed Image")
  })
})

describe("versions, pricing components and catalog management", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("prices dynamic components from the input in estimate and submit", async () => {
    const doc = demoCatalog()
    const video = doc.models.find((m) => m.slug === "demo/video-gen/text-to-video")!
    video.versions[0].inputSchema.properties.resolution = { enum: ["480p", "1080p"] }
    video.versions[0].pricing = {
      baseCredits: 50,
      unit: "per_generation",
      components: [{ type: "multiplier", name: "resolution", field: "resolution", values: { "480p": 1, "1080p": 2 }, default: "480p" }]
    }
    expect((await engine.admin("PUT", "/admin/catalog", doc)).status).toBe(200)
    const acc = await engine.account()
    const audio = await acc.post("/v1/jobs/estimate", { model: "demo/audio-gen/text-to-audio", input: { prompt: "x", duration: 5 } })
    expect(audio.body.breakdown).toEqual([{ component: "base", costMicroCents: 20_000 }, { component: "duration", costMicroCents: 200_000 }])
    expect(audio.body.estimatedCostMicroCents).toBe(220_000)
    const sd = await acc.post("/v1/jobs/estimate", { model: "demo/video-gen/text-to-video" })
    expect(sd.body.estimatedCostMicroCents).toBe(500_000)
    const hd = await acc.post("/v1/jobs/submit", { model: "demo/video-gen/text-to-video", input: { prompt: "x", resolution: "1080p" } })
    expect(hd.body.costMicroCents).toBe(1_000_000)
  })

  it("marks estimates of deprecated versions with a Deprecation header", async () => {
    const acc = await engine.account()
    const old = await acc.post("/v1/jobs/estimate", { model: IMAGE, version: "v1" })
    expect(old.headers.get("deprecation")).toMatch(/^@\d+$/)
    expect((await acc.post("/v1/jobs/estimate", { model: IMAGE })).headers.get("deprecation")).toBeNull()
  })

  it("exports exactly what it imports, and publishes the document's JSON Schema", async () => {
    const doc = catalogWithVariant()
    expect((await engine.admin("PUT", "/admin/catalog", doc)).status).toBe(200)
    const exported = await engine.admin("GET", "/admin/catalog")
    expect((await engine.admin("PUT", "/admin/catalog", exported.body)).status).toBe(200)
    expect((await engine.admin("GET", "/admin/catalog")).body).toEqual(exported.body)
    expect(exported.body.models.map((m: any) => m.slug)).toEqual(doc.models.map((m) => m.slug))
    const schema = await engine.admin("GET", "/admin/catalog/schema")
    expect(schema.status).toBe(200)
    expect(schema.body.$schema).toMatch(/json-schema/)
    const validate = compileSchema(schema.body)
    expect(validate(exported.body)).toBe(true)
    expect(validate({ ...exported.body, models: [{ slug: "no slash" }] })).toBe(false)
  })
})
