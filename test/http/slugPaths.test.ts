import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

/** Both forms of a slug URL: the spec's literal slashes, and one percent-encoded parameter (OpenAPI's form). */
describe("slug paths", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("answers a catalog model alike with literal and percent-encoded slashes", async () => {
    const literal = await engine.request("GET", "/v1/catalog/models/demo/image-gen/text-to-image")
    const encoded = await engine.request("GET", `/v1/catalog/models/${encodeURIComponent("demo/image-gen/text-to-image")}`)
    expect(literal.status).toBe(200)
    expect(encoded.status).toBe(200)
    expect(encoded.body).toEqual(literal.body)
    expect((await engine.request("GET", "/v1/catalog/models/demo%2Fnone")).body.error.code).toBe("MODEL_NOT_FOUND")
  })

  it("answers a model alike with literal and percent-encoded slashes", async () => {
    const acc = await engine.account()
    const literal = await acc.get("/v1/models/demo/image-gen/text-to-image")
    const encoded = await acc.get(`/v1/models/${encodeURIComponent("demo/image-gen/text-to-image")}`)
    expect(literal.status).toBe(200)
    expect(encoded.status).toBe(200)
    expect(encoded.body).toEqual(literal.body)
    expect((await acc.get("/v1/models/demo%2Fnone")).body.error.code).toBe("MODEL_NOT_FOUND")
  })
})
