import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { checkCatalogDocument } from "../../src/domain/catalogCheck.js"
import { sampleCatalog } from "../conformance/fixtures.js"

const reasonsOf = (input: unknown) => Result.getFailure(checkCatalogDocument(input)).pipe((o) => (o._tag === "Some" ? o.value : []))
const catalog = sampleCatalog()

describe("the reasons a catalog document is refused", () => {
  it("name each wrong field by its path, one line each, not the document's whole type", () => {
    const [model] = catalog.models
    const { slug: _slug, ...withoutSlug } = model!
    const reasons = reasonsOf({ ...catalog, models: [{ ...withoutSlug, extra: 1 }] })
    expect(reasons).toEqual([expect.stringMatching(/^\/models\/0\/extra: is unexpected/), "/models/0/slug: is missing"])
    expect(reasons.join("\n").length).toBeLessThan(400)
    // Effect 4 names the expected type by its short name (`array`), where Effect 3 spelled it out.
    expect(reasonsOf({ ...catalog, categories: "x" })).toEqual(['/categories: Expected array, actual "x"'])
  })

  it("keep the rules' own reasons once the shape is right", () => {
    const [model] = catalog.models
    expect(reasonsOf({ ...catalog, models: [{ ...model!, providerId: "nobody" }] }).join("\n")).toMatch(/unknown providerId "nobody"/)
  })
})
