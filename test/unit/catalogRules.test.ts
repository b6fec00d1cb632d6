import { describe, expect, it } from "vitest"
import type { Account } from "../../src/domain/account.js"
import type { CatalogDocument, CatalogModel, ModelVersion } from "../../src/domain/catalog.js"
import { readFileSync } from "node:fs"
import { checkCatalogDocument } from "../../src/domain/catalogCheck.js"
import { canSee, catalogProblems, defaultVersion, findModel, isUsable } from "../../src/domain/catalogRules.js"
import type { AccountId } from "../../src/domain/ids.js"
import { sampleCatalog } from "../conformance/fixtures.js"

const account = (overrides: Partial<Account> = {}): Account => ({
  id: "acc_1" as AccountId,
  name: "a",
  balanceMicroCents: 0,
  maxConcurrentJobs: 1,
  segments: [],
  allowedModels: [],
  discounts: [],
  webhookSecret: "s",
  previousWebhookSecret: null,
  previousWebhookSecretExpiresAt: null,
  standardWebhooks: false,
  createdAt: 0,
  ...overrides
})

const version = (versionId: string, status: ModelVersion["status"]): ModelVersion => ({
  versionId,
  status,
  inputSchema: { type: "object" },
  outputSchema: { type: "object" },
  pricing: { baseCredits: 1, unit: "per_generation" },
  rateLimits: { requestsPerMinute: 0, requestsPerDay: 0 },
  estimatedSeconds: 30
})

const model = (overrides: Partial<CatalogModel> = {}): CatalogModel => ({
  ...sampleCatalog().models[0]!,
  ...overrides
})

describe("visibility", () => {
  it("shows public models to everyone, segment models to members, private models to listed accounts", () => {
    const pub = model({ visibility: "public" })
    const seg = model({ visibility: "segment", segments: ["pro", "beta"] })
    const priv = model({ visibility: "private" })
    expect([canSee(pub, undefined), canSee(pub, account())]).toEqual([true, true])
    expect([canSee(seg, undefined), canSee(seg, account()), canSee(seg, account({ segments: ["beta"] }))]).toEqual([false, false, true])
    expect([canSee(priv, undefined), canSee(priv, account({ segments: ["pro"] })), canSee(priv, account({ allowedModels: [priv.slug] }))])
      .toEqual([false, false, true])
  })
})

describe("versions", () => {
  it("uses the current version when active", () => {
    expect(defaultVersion(model({ currentVersion: "v1", versions: [version("v1", "active"), version("v2", "active")] }))?.versionId).toBe("v1")
  })

  it("falls back to the newest active version, then to a deprecated current one", () => {
    expect(defaultVersion(model({ currentVersion: "v1", versions: [version("v1", "disabled"), version("v2", "active"), version("v3", "active")] }))?.versionId).toBe("v3")
    expect(defaultVersion(model({ currentVersion: "v2", versions: [version("v1", "deleted"), version("v2", "deprecated")] }))?.versionId).toBe("v2")
    expect(defaultVersion(model({ currentVersion: "v1", versions: [version("v1", "disabled")] }))).toBeUndefined()
  })

  it("serves active and deprecated versions only", () => {
    expect((["active", "deprecated", "disabled", "deleted"] as const).map((s) => isUsable(version("v", s)))).toEqual([true, true, false, false])
  })
})

describe("slugs", () => {
  const models = [model({ slug: "p/m/text-to-image" }), model({ slug: "p/m/image-to-image" }), model({ slug: "p/other" })]
  it("finds exact slugs, and provider/model names its first variant", () => {
    expect(findModel(models, "p/m/image-to-image")?.slug).toBe("p/m/image-to-image")
    expect(findModel(models, "p/m")?.slug).toBe("p/m/text-to-image")
    expect(findModel(models, "p/other")?.slug).toBe("p/other")
    expect(findModel(models, "p/none")).toBeUndefined()
    expect(findModel(models, "p/m/none")).toBeUndefined()
  })
})

describe("catalog documents", () => {
  it("accepts the bundled demo catalog", () => {
    expect(catalogProblems(sampleCatalog())).toEqual([])
  })

  it("accepts the README's example catalog of real providers (CATALOG_FILE=examples/catalogs/providers.json)", () => {
    const example = JSON.parse(readFileSync(new URL("../../examples/catalogs/providers.json", import.meta.url), "utf8"))
    const checked = checkCatalogDocument(example)
    expect(checked._tag === "Failure" ? checked.failure : []).toEqual([])
  })

  it("lists every broken reference and invalid schema", () => {
    const doc = sampleCatalog()
    const first = doc.models[0]!
    const broken: CatalogDocument = {
      ...doc,
      models: [
        { ...first, providerId: "ghost", category: "nope", capability: "nada", currentVersion: "v9" },
        { ...first, visibility: "segment", segments: [], versions: [version("v1", "active"), { ...version("v1", "active"), inputSchema: { type: 12 } }] }
      ]
    }
    const problems = catalogProblems(broken).join("\n")
    for (const expected of [
      /unknown providerId "ghost"/,
      /unknown category "nope"/,
      /unknown capability "nada"/,
      /currentVersion "v9"/,
      /duplicate model slug/,
      /duplicate version "v1"/,
      /inputSchema is not a valid JSON Schema/,
      /needs at least one segment/
    ]) {
      expect(problems).toMatch(expected)
    }
  })
})
