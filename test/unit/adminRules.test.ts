import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { changesBetween, newAuditId, redact } from "../../src/domain/audit.js"
import { checkCatalogDocument } from "../../src/domain/catalogCheck.js"
import { catalogDiff, isEmptyDiff } from "../../src/domain/catalogDiff.js"
import { parseAdminTokens } from "../../src/http/adminTokens.js"
import { demoCatalog } from "../support/demoCatalog.js"

describe("audit summaries", () => {
  it("replace credential-like fields at any depth and keep the rest", () => {
    expect(redact({ name: "a", webhookSecret: "whsec_1", nested: [{ key: "gjk_x", token: "t", hint: "gjk_A" }], hash: "h" })).toEqual({
      name: "a",
      webhookSecret: "[redacted]",
      nested: [{ key: "[redacted]", token: "[redacted]", hint: "gjk_A" }],
      hash: "[redacted]"
    })
  })

  it("list only the fields a change set differently, compared by content", () => {
    const before = { name: "a", segments: ["x"], maxConcurrentJobs: 5 }
    expect(changesBetween(before, { name: "a", segments: ["x", "y"], maxConcurrentJobs: 6 })).toEqual({
      segments: { from: ["x"], to: ["x", "y"] },
      maxConcurrentJobs: { from: 5, to: 6 }
    })
    expect(changesBetween(before, { segments: ["x"] })).toEqual({})
  })

  it("ids sort in creation order, also within one millisecond", () => {
    const ids = [newAuditId(1_000), newAuditId(1_000), newAuditId(1_001), newAuditId(999)]
    expect([...ids].sort()).toEqual(ids)
  })
})

describe("ADMIN_TOKENS", () => {
  it("reads name:token pairs; a token may hold a colon", () => {
    expect(parseAdminTokens(" alice:tok1, bob:a:b ,")).toEqual(Result.succeed([{ name: "alice", token: "tok1" }, { name: "bob", token: "a:b" }]))
  })

  it("refuses missing tokens, bad or repeated names and shared tokens", () => {
    for (const text of ["alice", "alice:", ":tok", "al ice:t", "alice:t1,alice:t2", "alice:t,bob:t", " , "]) {
      expect(Result.isFailure(parseAdminTokens(text)), text).toBe(true)
    }
  })
})

describe("catalog files", () => {
  it("are checked as the engine checks them, with every reason", () => {
    expect(Result.isSuccess(checkCatalogDocument(demoCatalog()))).toBe(true)
    const doc = demoCatalog() as any
    const broken = { ...doc, models: [{ ...doc.models[0], providerId: "nobody" }], extra: 1 }
    expect(Result.getFailure(checkCatalogDocument(broken))._tag).toBe("Some")
    const reasons = Result.getOrElse(Result.flip(checkCatalogDocument({ ...doc, models: [{ ...doc.models[0], providerId: "nobody" }] })), () => [])
    expect(reasons.join("\n")).toMatch(/unknown providerId "nobody"/)
  })

  it("diff by id: added, removed and changed", () => {
    const before = Result.getOrThrow(checkCatalogDocument(demoCatalog()))
    const [first, second, ...rest] = before.models
    const after = { ...before, models: [{ ...first!, name: "Renamed" }, ...rest, { ...second!, slug: `${second!.providerId}/new/one` }] }
    const diff = catalogDiff(before, after)
    expect(diff.models).toEqual({ added: [`${second!.providerId}/new/one`], removed: [second!.slug], changed: [first!.slug] })
    expect(diff.providers).toEqual({ added: [], removed: [], changed: [] })
    expect(isEmptyDiff(diff)).toBe(false)
    expect(isEmptyDiff(catalogDiff(before, before))).toBe(true)
  })
})
