/** The pure parts of the provider adapters: when to ask again, redaction, outputs and base64 streaming, Runway endpoints. */
import { Effect, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { openAIApi, openAIRetryAfterMs, parseOpenAIDuration } from "../../adapters/providers/openai/api.js"
import { redact } from "../../adapters/providers/providerHttp.js"
import { parseRetryAfterMs as parseRetryAfter } from "../../src/domain/retryAfter.js"
import { base64Stream, outputTypeOf, urlOutput } from "../../adapters/providers/providerOutputs.js"
import { runwayTargetOf } from "../../adapters/providers/runway/endpoints.js"

const NOW = Date.parse("2025-01-01T00:00:00Z")

describe("Retry-After", () => {
  it("reads delay seconds and HTTP dates; anything else says nothing", () => {
    expect(parseRetryAfter("7", NOW)).toBe(7_000)
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:10 GMT", NOW)).toBe(10_000)
    expect(parseRetryAfter(" 1.5 ", NOW)).toBe(1_500)
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:30 GMT", NOW)).toBe(30_000)
    expect(parseRetryAfter("Tue, 31 Dec 2024 23:59:00 GMT", NOW)).toBe(0)
    expect(parseRetryAfter("soon", NOW)).toBeUndefined()
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined()
  })

  it("reads OpenAI's reset durations", () => {
    expect(parseOpenAIDuration("6m0s")).toBe(360_000)
    expect(parseOpenAIDuration("20ms")).toBe(20)
    expect(parseOpenAIDuration("1h2m3.5s")).toBe(3_723_500)
    expect(parseOpenAIDuration("6 minutes")).toBeUndefined()
  })

  it("OpenAI: retry-after-ms, then retry-after, then the reset of the exhausted limit, else the later reset", () => {
    const resets = { "x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "1m0s" }
    expect(openAIRetryAfterMs({ "retry-after-ms": "250", "retry-after": "9", ...resets }, NOW)).toBe(250)
    expect(openAIRetryAfterMs({ "retry-after": "9", ...resets }, NOW)).toBe(9_000)
    expect(openAIRetryAfterMs({ ...resets, "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "50" }, NOW)).toBe(2_000)
    expect(openAIRetryAfterMs(resets, NOW)).toBe(60_000)
    expect(openAIRetryAfterMs({}, NOW)).toBeUndefined()
  })

  it("OpenAI: a used-up quota answers 429 but is not worth asking again; 408, 409 and 5xx are", () => {
    const api = openAIApi("sk-x")
    const quota = { error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } }
    const rate = { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } }
    expect([api.isRetryable(429, quota), api.isRetryable(429, rate), api.isRetryable(429, undefined)]).toEqual([false, true, true])
    expect([408, 409, 500, 503].map((status) => api.isRetryable(status, undefined))).toEqual([true, true, true, true])
    expect([400, 401, 403, 404].map((status) => api.isRetryable(status, undefined))).toEqual([false, false, false, false])
  })
})

describe("redaction", () => {
  it("removes every occurrence of every secret", () => {
    expect(redact("key sk-1 and sk-1 again, and k2", ["sk-1", "k2", ""])).toBe("key [redacted] and [redacted] again, and [redacted]")
  })
})

describe("outputs", () => {
  it("takes an output's type from its content type or extension, else the declared type", () => {
    expect(outputTypeOf("video/mp4", "image")).toBe("video")
    expect(outputTypeOf(undefined, "audio")).toBe("audio")
    expect(urlOutput("https://x.test/a/out.webm?sig=1", "image")).toMatchObject({ type: "video", contentType: "video/webm" })
    expect(urlOutput("https://x.test/file", "audio")).toMatchObject({ type: "audio" })
  })

  it("decodes data URLs into bytes, since nothing can fetch them", async () => {
    const output = urlOutput(`data:image/png;base64,${Buffer.from("png!").toString("base64")}`, "image")
    expect(output).toMatchObject({ type: "image", source: { _tag: "Bytes", contentType: "image/png" } })
    if (output.source._tag !== "Bytes") throw new Error("expected bytes")
    const chunks = await Effect.runPromise(Stream.runCollect(output.source.body))
    expect(Buffer.concat(chunks).toString()).toBe("png!")
  })
})

describe("base64 as a stream", () => {
  it("decodes chunk by chunk to the same bytes, whatever the chunk size asked", async () => {
    const bytes = randomBytes(100_003)
    for (const chunkChars of [4, 4096, 4097, 1 << 16, 1 << 20]) {
      const chunks = await Effect.runPromise(Stream.runCollect(base64Stream(bytes.toString("base64"), chunkChars)))
      expect(Buffer.concat(chunks).equals(bytes)).toBe(true)
      expect(chunks.length).toBe(Math.ceil(bytes.toString("base64").length / (chunkChars - (chunkChars % 4))))
    }
  })
})

describe("Runway endpoints", () => {
  it("an endpoint named in the provider model wins; a bare model goes where its input points", () => {
    expect(runwayTargetOf("text_to_video/veo3", { promptImage: "x" })).toEqual({ endpoint: "text_to_video", model: "veo3" })
    expect(runwayTargetOf("veo3", { promptImage: "x" })).toEqual({ endpoint: "image_to_video", model: "veo3" })
    expect(runwayTargetOf("aleph2", { videoUri: "x" })).toEqual({ endpoint: "video_to_video", model: "aleph2" })
    expect(runwayTargetOf("seedance2", { promptVideo: "x" })).toEqual({ endpoint: "video_to_video", model: "seedance2" })
    expect(runwayTargetOf("gen4_image_turbo", { promptText: "x" })).toEqual({ endpoint: "text_to_image", model: "gen4_image_turbo" })
    expect(runwayTargetOf("gen4.5", { promptText: "x" })).toEqual({ endpoint: "text_to_video", model: "gen4.5" })
    expect(runwayTargetOf("sound_effect/eleven_text_to_sound_v2", {})).toEqual({ endpoint: "sound_effect", model: "eleven_text_to_sound_v2" })
    expect(runwayTargetOf("tasks/x", {})).toBeUndefined()
    expect(runwayTargetOf("image_to_video/", {})).toBeUndefined()
  })
})
