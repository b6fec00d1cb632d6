import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Catalog } from "../../src/services/Catalog.js"
import { demoCatalog, type EditableCatalog } from "../support/demoCatalog.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const FLUX = "fal/flux/text-to-image"
const IMAGE = "demo/image-gen/text-to-image"

/** The demo catalog plus a fal model: the test engine registers only the demo provider. */
const withFalModel = (status = "active"): EditableCatalog => {
  const doc = demoCatalog()
  const image = doc.models.find((m) => m.slug === IMAGE)!
  doc.providers.push({ id: "fal", name: "fal.ai", description: "", logoUrl: "", website: "", color: "#000000" })
  doc.models.push({
    ...structuredClone(image),
    slug: FLUX,
    providerId: "fal",
    name: "FLUX",
    currentVersion: "v1",
    versions: [{ ...structuredClone(image.versions.at(-1)), versionId: "v1", status }]
  })
  return doc
}

/** The demo catalog with a sunset on the image model's current version (v2). */
const withSunset = (sunsetAt: string): EditableCatalog => {
  const doc = demoCatalog()
  const image = doc.models.find((m) => m.slug === IMAGE)!
  image.versions.find((v: any) => v.versionId === image.currentVersion).sunsetAt = sunsetAt
  return doc
}

const expectError = (reply: { status: number; body: any }, status: number, code: string) => {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code })
}

describe("catalog versions whose provider is not registered", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("are refused by PUT /admin/catalog and its diff, naming each version and provider, and nothing changes", async () => {
    const before = await engine.admin("GET", "/admin/catalog")
    const refused = await engine.admin("PUT", "/admin/catalog", withFalModel())
    expectError(refused, 400, "VALIDATION_ERROR")
    expect(refused.body.error.details.unregisteredProviders).toEqual([{ model: FLUX, version: "v1", providers: ["fal"] }])
    expect(refused.body.error.details.reasons).toEqual([`model "${FLUX}" version "v1": no registered provider ("fal")`])
    const preview = await engine.admin("POST", "/admin/catalog/diff", withFalModel())
    expectError(preview, 400, "VALIDATION_ERROR")
    expect(preview.body.error.details).toEqual(refused.body.error.details)

    const after = await engine.admin("GET", "/admin/catalog")
    expect(after.headers.get("etag")).toBe(before.headers.get("etag"))
    expect(after.body).toEqual(before.body)
  })

  it("are accepted disabled, since no request reaches them", async () => {
    const accepted = await engine.admin("PUT", "/admin/catalog", withFalModel("disabled"))
    expect(accepted.status).toBe(200)
    expect(accepted.body.revision).toBeGreaterThan(1)
  })

  it("stored by a process that had the provider, are served as disabled: not listed, and a submit is refused before any charge", async () => {
    // As a catalog stored before the credential was removed, or by a process that holds it.
    await engine.runtime.runPromise(Catalog.use((catalog) => catalog.replace(withFalModel(), undefined, { allowUnregisteredProviders: true })))
    const acc = await engine.account({ credits: 1_000_000 })
    const balance = async () => (await engine.admin("GET", `/admin/accounts/${acc.accountId}`)).body.balanceMicroCents

    const submit = await acc.post("/v1/jobs/submit", { model: FLUX, input: { prompt: "x" } })
    expectError(submit, 404, "MODEL_NOT_FOUND")
    expectError(await acc.post("/v1/jobs/submit", { model: FLUX, version: "v1", input: { prompt: "x" } }), 404, "MODEL_NOT_FOUND")
    expectError(await acc.post("/v1/jobs/estimate", { model: FLUX }), 404, "MODEL_NOT_FOUND")
    expect(await balance()).toBe(1_000_000)
    expect((await acc.get("/v1/jobs")).body.jobs).toEqual([])

    const listed = await engine.request("GET", "/v1/catalog/models")
    expect(listed.body.map((m: any) => m.slug)).not.toContain(FLUX)
    expect((await acc.get(`/v1/models/${encodeURIComponent(FLUX)}`)).body.versions.map((v: any) => v.status)).toEqual(["disabled"])
    // The demo models beside it are served as before.
    expect((await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } })).status).toBe(200)
  })
})

describe("a version with a sunsetAt", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  it("is shown with its sunset, and answers submits and estimates with Deprecation and Sunset headers", async () => {
    expect((await engine.admin("PUT", "/admin/catalog", withSunset("2099-03-31T12:00:00+02:00"))).status).toBe(200)
    const acc = await engine.account()
    const sunset = "Tue, 31 Mar 2099 10:00:00 GMT"

    for (const reply of [
      await acc.post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } }),
      await acc.post("/v1/jobs/estimate", { model: IMAGE })
    ]) {
      expect(reply.status).toBe(200)
      expect(reply.headers.get("sunset")).toBe(sunset)
      // Deprecated as of the answer (RFC 9745 `@<epoch seconds>`), before the sunset.
      const deprecatedAt = Number(reply.headers.get("deprecation")?.replace(/^@/, ""))
      expect(Math.abs(deprecatedAt - Date.now() / 1000)).toBeLessThan(60)
    }

    const list = await acc.get("/v1/models")
    expect(list.body.models.find((m: any) => m.id === IMAGE).currentVersionSunsetAt).toBe("2099-03-31T12:00:00+02:00")
    expect(list.body.models.find((m: any) => m.id === "demo/text-gen/text-to-text")).not.toHaveProperty("currentVersionSunsetAt")
    const detail = await acc.get(`/v1/models/${encodeURIComponent(IMAGE)}`)
    expect(detail.body.versions.map((v: any) => [v.versionId, v.status, v.sunsetAt])).toEqual([
      ["v1", "deprecated", undefined],
      ["v2", "active", "2099-03-31T12:00:00+02:00"]
    ])
    expect((await engine.request("GET", `/v1/catalog/models/${encodeURIComponent(IMAGE)}`)).body.sunsetAt).toBe("2099-03-31T12:00:00+02:00")
  })

  it("past its sunset is served as disabled: shown so, and a submit naming it is refused", async () => {
    expect((await engine.admin("PUT", "/admin/catalog", withSunset("2020-01-01T00:00:00Z"))).status).toBe(200)
    const acc = await engine.account()
    expectError(await acc.post("/v1/jobs/submit", { model: IMAGE, version: "v2", input: { prompt: "x" } }), 404, "MODEL_NOT_FOUND")
    const detail = await acc.get(`/v1/models/${encodeURIComponent(IMAGE)}`)
    expect(detail.body.versions.map((v: any) => [v.versionId, v.status])).toEqual([["v1", "deprecated"], ["v2", "disabled"]])
  })

  it("must be an ISO 8601 date-time with its offset, on a day that exists", async () => {
    for (const sunsetAt of ["2099-03-31", "next year", "2099-02-30T00:00:00Z"]) {
      const refused = await engine.admin("PUT", "/admin/catalog", withSunset(sunsetAt))
      expectError(refused, 400, "VALIDATION_ERROR")
      expect(refused.body.error.details.errors[0]).toEqual({
        path: "/models/0/versions/1/sunsetAt",
        message: expect.stringMatching(/ISO 8601|exists/)
      })
    }
  })
})
