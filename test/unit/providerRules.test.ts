import { Result, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { backoffDelayMs } from "../../src/domain/backoff.js"
import { CatalogDocument, providerInputOf } from "../../src/domain/catalog.js"
import { acceptsContentType, extensionOf } from "../../src/domain/outputFiles.js"
import { callbackUrlOf, providerRequestOf } from "../../src/services/providerRequest.js"
import { job, sampleCatalog } from "../conformance/fixtures.js"
import { demoCatalog } from "../support/demoCatalog.js"

describe("backoff", () => {
  const backoff = { baseMs: 1_000, capMs: 8_000 }

  it("draws below a ceiling that doubles each retry up to the cap (full jitter)", () => {
    expect([0, 1, 2, 3, 4, 10].map((attempt) => backoffDelayMs(backoff, attempt, 0.999_999))).toEqual([999, 1_999, 3_999, 7_999, 7_999, 7_999])
    expect(backoffDelayMs(backoff, 3, 0.5)).toBe(4_000)
    expect(backoffDelayMs(backoff, 3, 0)).toBe(0)
  })

  it("never retries sooner than the provider's Retry-After, even past the cap", () => {
    expect(backoffDelayMs(backoff, 0, 0.1, 5_000)).toBe(5_000)
    expect(backoffDelayMs(backoff, 5, 0.9, 60_000)).toBe(60_000)
    expect(backoffDelayMs(backoff, 3, 0.9, 10)).toBe(7_200)
  })

  it("stays finite however many retries came before", () => {
    expect(backoffDelayMs(backoff, 5_000, 0.5)).toBe(4_000)
  })
})

describe("provider input mapping", () => {
  it("copies $.field references, leaves out absent fields, sends constants as they are", () => {
    const mapping = { input: { prompt: "$.text", negative_prompt: "$.avoid", steps: 30, scheduler: "K_EULER", extra: { nested: true } } }
    expect(providerInputOf(mapping, { text: "a fox", other: 1 })).toEqual({ prompt: "a fox", steps: 30, scheduler: "K_EULER", extra: { nested: true } })
  })

  it("passes the job's input through without a mapping", () => {
    const input = { prompt: "x", demoDelayMs: 5 }
    expect(providerInputOf(undefined, input)).toBe(input)
    expect(providerInputOf({ model: "owner/name" }, input)).toBe(input)
  })

  it("builds the request: the provider's model (else the slug), the mapped input, the job id as idempotency key", () => {
    const model = sampleCatalog().models[0]!
    const j = job("acc_1" as never, { input: { text: "hi" } })
    const plain = providerRequestOf(j, model, model.versions[0]!)
    expect(plain).toMatchObject({ providerModel: model.slug, input: { text: "hi" }, idempotencyKey: j.id })
    expect(plain).not.toHaveProperty("callbackUrl")
    const mapped = providerRequestOf(
      j,
      model,
      { ...model.versions[0]!, provider: { model: "black-forest-labs/flux-schnell", input: { prompt: "$.text", go_fast: true } } },
      callbackUrlOf("https://api.genjobs.test/genjobs/", "replicate", j.id)
    )
    expect(mapped).toMatchObject({
      providerModel: "black-forest-labs/flux-schnell",
      input: { prompt: "hi", go_fast: true },
      callbackUrl: `https://api.genjobs.test/genjobs/v1/providers/replicate/callbacks/${j.id}`
    })
  })
})

describe("the catalog's provider mapping at import", () => {
  const withMapping = (provider: unknown) => {
    const catalog = demoCatalog()
    catalog.models[0]!["versions"][0].provider = provider
    return Schema.decodeUnknownResult(CatalogDocument)(catalog)
  }

  it("accepts a model id, an input mapping and a positive timeout", () => {
    expect(Result.isSuccess(withMapping({ model: "fal-ai/flux/dev", input: { prompt: "$.prompt", num_images: 1 }, timeoutSeconds: 600 }))).toBe(true)
    expect(Result.isSuccess(withMapping({}))).toBe(true)
  })

  it("refuses a malformed field reference, an empty model id, a non-positive timeout", () => {
    expect(Result.isFailure(withMapping({ input: { prompt: "$prompt" } }))).toBe(true)
    expect(Result.isFailure(withMapping({ input: { prompt: "$." } }))).toBe(true)
    expect(Result.isFailure(withMapping({ model: "" }))).toBe(true)
    expect(Result.isFailure(withMapping({ timeoutSeconds: 0 }))).toBe(true)
    expect(Result.isFailure(withMapping({ timeoutSeconds: -5 }))).toBe(true)
  })
})

describe("output files", () => {
  it("accepts a media type of the output's kind, or exactly the declared one", () => {
    expect(acceptsContentType("image", "image/png")).toBe(true)
    expect(acceptsContentType("video", "Video/MP4; codecs=avc1")).toBe(true)
    expect(acceptsContentType("video", "image/apng")).toBe(false)
    expect(acceptsContentType("video", "image/apng", "image/apng")).toBe(true)
    expect(acceptsContentType("text", "application/json", "application/json; charset=utf-8")).toBe(true)
    expect(acceptsContentType("image", "text/html", "image/png")).toBe(false)
  })

  it("names the stored file's extension after its type", () => {
    expect(["image/png", "image/apng", "video/mp4", "audio/mpeg", "text/plain; charset=utf-8", "image/avif", "application/x-weird+zip"].map(extensionOf))
      .toEqual(["png", "png", "mp4", "mp3", "txt", "avif", "bin"])
  })
})
