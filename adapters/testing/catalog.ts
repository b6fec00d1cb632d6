import type { CatalogDocument, CatalogModel } from "../../src/domain/catalog.js"

/** The provider id of the test catalog's models; the fake provider is registered under it. */
export const TEST_PROVIDER_ID = "test"

const model = (kind: "image" | "text" | "audio" | "video", credits: number): CatalogModel => ({
  slug: `${TEST_PROVIDER_ID}/${kind}`,
  providerId: TEST_PROVIDER_ID,
  name: `Test ${kind}`,
  description: `Fake ${kind} model for tests`,
  category: kind,
  capability: `text-to-${kind}`,
  tags: ["test"],
  ratings: { average: 0, count: 0 },
  visibility: "public",
  segments: [],
  currentVersion: "v1",
  versions: [{
    versionId: "v1",
    status: "active",
    // Any input object: the models exist to run the code under test, not to check its inputs.
    inputSchema: { type: "object", properties: { prompt: { type: "string" } } },
    outputSchema: { type: "object" },
    pricing: { baseCredits: credits, unit: "per_generation" },
    rateLimits: { requestsPerMinute: 0, requestsPerDay: 0 },
    estimatedSeconds: 1
  }]
})

/** Four public models, one active version `v1` each: test/text (1 credit), test/image (2), test/audio (3), test/video (5). */
export const testCatalog: CatalogDocument = {
  categories: (["image", "text", "audio", "video"] as const).map((id) => ({ id, name: id, description: "" })),
  capabilities: (["image", "text", "audio", "video"] as const).map((kind, order) => ({
    id: `text-to-${kind}`,
    displayName: `Text to ${kind}`,
    label: `T2${kind[0]!.toUpperCase()}`,
    icon: kind,
    color: "#6b7280",
    order
  })),
  providers: [{
    id: TEST_PROVIDER_ID,
    name: "Test provider",
    description: "The fake provider of genjobs/testing",
    logoUrl: "",
    website: "",
    color: "#6b7280",
    isActive: true
  }],
  models: [model("text", 1), model("image", 2), model("audio", 3), model("video", 5)]
}
