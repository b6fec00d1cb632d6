import { Schema } from "effect"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { unregisteredReport } from "../../apps/server/catalogReport.js"
import { PROVIDER_CREDENTIALS } from "../../apps/server/providers.js"
import { CatalogDocument } from "../../src/domain/catalog.js"
import { servedCatalog, servedStatus, sunsetsPassed, unregisteredVersions } from "../../src/domain/catalogServing.js"
import { deprecationHeaders } from "../../src/http/deprecationHeaders.js"
import { demoCatalog } from "../support/demoCatalog.js"

const HOUR = 3_600_000

/** The demo catalog plus a model on `providerId`, whose versions are given. */
const catalogWith = (providerId: string, versions: ReadonlyArray<{ versionId: string; status: string; sunsetAt?: string }>) => {
  const doc = demoCatalog()
  const base = doc.models[0]!
  doc.providers.push({ id: providerId, name: providerId, description: "", logoUrl: "", website: "", color: "#000000" })
  doc.models.push({
    ...structuredClone(base),
    slug: `${providerId}/model/text-to-image`,
    providerId,
    currentVersion: versions[0]!.versionId,
    versions: versions.map((v) => ({ ...structuredClone(base.versions[0]), ...v }))
  })
  return Schema.decodeUnknownSync(CatalogDocument)(doc)
}

const onlyDemo = (id: string) => id === "demo"

describe("what a catalog serves", () => {
  it("names each version a request could reach whose providers are all unregistered, and skips the others", () => {
    const doc = catalogWith("fal", [
      { versionId: "a", status: "active" },
      { versionId: "b", status: "deprecated" },
      { versionId: "c", status: "disabled" },
      { versionId: "d", status: "deleted" },
      { versionId: "e", status: "active", sunsetAt: "1970-01-01T01:00:00Z" }
    ])
    expect(unregisteredVersions(doc, 0, onlyDemo)).toEqual([
      { model: "fal/model/text-to-image", version: "a", providers: ["fal"] },
      { model: "fal/model/text-to-image", version: "b", providers: ["fal"] },
      { model: "fal/model/text-to-image", version: "e", providers: ["fal"] }
    ])
    // Past its sunset, e is disabled anyway: nothing to refuse.
    expect(unregisteredVersions(doc, HOUR, onlyDemo).map((v) => v.version)).toEqual(["a", "b"])
    expect(unregisteredVersions(doc, 0, () => true)).toEqual([])
  })

  it("counts every route's provider: a version runs while any route's provider is registered", () => {
    const doc = catalogWith("fal", [
      { versionId: "a", status: "active" },
      { versionId: "b", status: "active" }
    ])
    const model = doc.models.at(-1)!
    const withRoutes = Schema.decodeUnknownSync(CatalogDocument)({
      ...doc,
      models: [...doc.models.slice(0, -1), {
        ...model,
        versions: [
          { ...model.versions[0], routes: [{ provider: "fal" }, { provider: "demo" }] },
          { ...model.versions[1], routes: [{ provider: "fal" }, { provider: "runway" }, { provider: "fal" }] }
        ]
      }]
    })
    expect(unregisteredVersions(withRoutes, 0, onlyDemo)).toEqual([
      { model: "fal/model/text-to-image", version: "b", providers: ["fal", "runway"] }
    ])
  })

  it("serves a version past its sunset, or without a registered provider, as disabled; deleted stays deleted", () => {
    const doc = catalogWith("demo2", [
      { versionId: "a", status: "active", sunsetAt: "1970-01-01T01:00:00+00:00" },
      { versionId: "b", status: "deprecated", sunsetAt: "1970-01-01T02:00:00+01:00" },
      { versionId: "c", status: "deleted", sunsetAt: "1970-01-01T00:00:00Z" }
    ])
    const model = doc.models.at(-1)!
    const statuses = (now: number, isRegistered: (id: string) => boolean) =>
      model.versions.map((v) => servedStatus(model, v, now, isRegistered))
    expect(statuses(HOUR - 1, () => true)).toEqual(["active", "deprecated", "deleted"])
    // b's sunset is 02:00 at +01:00: the same instant as a's.
    expect(statuses(HOUR, () => true)).toEqual(["disabled", "disabled", "deleted"])
    expect(statuses(0, onlyDemo)).toEqual(["disabled", "disabled", "deleted"])
    expect(sunsetsPassed(doc, HOUR - 1)).toBe(1)
    expect(sunsetsPassed(doc, HOUR)).toBe(3)
  })

  it("leaves a catalog with nothing to change as it is, model by model", () => {
    const doc = Schema.decodeUnknownSync(CatalogDocument)(demoCatalog())
    const served = servedCatalog(doc, Date.now(), onlyDemo)
    expect(served.models.every((model, i) => model === doc.models[i])).toBe(true)
  })
})

describe("the README's example catalog (examples/catalogs/providers.json)", () => {
  it("names only providers the bundled server registers, and no removed model", () => {
    const text = readFileSync(new URL("../../examples/catalogs/providers.json", import.meta.url), "utf8")
    const example = Schema.decodeUnknownSync(CatalogDocument)(JSON.parse(text))
    expect(unregisteredVersions(example, Date.now(), (id) => id in PROVIDER_CREDENTIALS)).toEqual([])
    expect(new Set(example.models.map((m) => m.providerId))).toEqual(new Set(Object.keys(PROVIDER_CREDENTIALS)))
    // OpenAI removed the Sora models and its Videos API on 2026-09-24.
    expect(text).not.toMatch(/sora/i)
  })
})

describe("the Deprecation and Sunset headers", () => {
  const now = Date.parse("2026-11-27T12:00:00.900Z")

  it("are absent for a version neither deprecated nor sunsetting", () => {
    expect(deprecationHeaders({ deprecated: false, sunsetAt: undefined }, now)).toEqual({})
  })

  it("give RFC 9745's @<epoch seconds> as of the answer, and RFC 8594's HTTP-date of the sunset", () => {
    expect(deprecationHeaders({ deprecated: true, sunsetAt: undefined }, now)).toEqual({ deprecation: "@1795780800" })
    expect(deprecationHeaders({ deprecated: false, sunsetAt: "2027-03-31T02:00:00+02:00" }, now)).toEqual({
      deprecation: "@1795780800",
      sunset: "Wed, 31 Mar 2027 00:00:00 GMT"
    })
  })
})

describe("the bundled server's start report", () => {
  it("says, per version, that it is served as disabled and which variable would register its provider", () => {
    expect(unregisteredReport([
      { model: "fal/flux/text-to-image", version: "v1", providers: ["fal"] },
      { model: "acme/x/text-to-image", version: "v2", providers: ["acme"] }
    ])).toEqual([
      "catalog: model \"fal/flux/text-to-image\" version \"v1\": no registered provider (\"fal\"): served as disabled; set FAL_KEY to serve it",
      "catalog: model \"acme/x/text-to-image\" version \"v2\": no registered provider (\"acme\"): served as disabled; register its provider to serve it"
    ])
    expect(unregisteredReport([])).toEqual([])
  })
})
