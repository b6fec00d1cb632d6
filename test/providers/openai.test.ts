/**
 * The OpenAI adapter against the OpenAI simulator: images answered within the start, the retired
 * Videos API (Sora) refused with what to use instead, OpenAI's errors typed as retryable or
 * permanent, and the key never in a message.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { openaiProvider } from "genjobs/providers/openai"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { type OpenAISimulator, startOpenAISimulator } from "../simulators/openai.js"
import { bytesOf, failureOf, requestFor } from "./support.js"

let sim: OpenAISimulator
let provider: GenerationProvider

beforeAll(async () => {
  sim = await startOpenAISimulator()
  provider = openaiProvider({ apiKey: sim.apiKey, baseUrl: sim.url, imageRequestTimeoutMs: 5_000 })
})
afterAll(() => sim.close())
beforeEach(() => sim.reset())

const start = (providerModel: string, input: Record<string, unknown>, on = provider) =>
  Effect.runPromise(on.start(requestFor(providerModel, input)))

describe("OpenAI Images API (synchronous)", () => {
  it("answers a gpt-image-1 generation within the start, its picture as a byte stream decoded from b64_json", async () => {
    const outcome = await start("gpt-image-1", { prompt: "a lighthouse", size: "1024x1024" })
    expect(outcome._tag).toBe("Finished")
    if (outcome._tag !== "Finished" || outcome.status._tag !== "Succeeded") throw new Error(JSON.stringify(outcome))
    expect(outcome.status.outputs).toHaveLength(1)
    const [output] = outcome.status.outputs
    expect([output!.type, output!.source._tag, output!.contentType]).toEqual(["image", "Bytes", "image/png"])
    const { bytes, contentType } = await Effect.runPromise(bytesOf(output!.source))
    expect(contentType).toBe("image/png")
    expect(bytes.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a")
    expect(sim.counters.starts).toBe(1)
    expect(sim.bodies.at(-1)).toEqual({ prompt: "a lighthouse", size: "1024x1024", model: "gpt-image-1" })
  })

  it("gives dall-e pictures as URLs, one output per picture", async () => {
    const outcome = await start("dall-e-2", { prompt: "two boats", n: 2 })
    if (outcome._tag !== "Finished" || outcome.status._tag !== "Succeeded") throw new Error(JSON.stringify(outcome))
    expect(outcome.status.outputs.map((output) => output.source._tag)).toEqual(["Url", "Url"])
    expect(outcome.status.outputs[0]!.metadata).toEqual({ revisedPrompt: "A picture of two boats" })
    const { bytes, contentType } = await Effect.runPromise(bytesOf(outcome.status.outputs[1]!.source))
    expect([contentType, bytes.subarray(1, 4).toString()]).toEqual(["image/png", "PNG"])
  })

  it("a prompt the safety system refuses is a permanent rejection with OpenAI's message", async () => {
    const error = await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "[reject] this" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 400 })
    expect(error.message).toContain("rejected as a result of our safety system")
    expect(sim.counters.starts).toBe(0)
  })
})

describe("OpenAI Videos API (removed by OpenAI on 2026-09-24)", () => {
  it("refuses a Sora model for good before asking OpenAI, naming the providers to use instead", async () => {
    for (const model of ["sora-2", "sora-2-pro"]) {
      const error = await failureOf(provider.start(requestFor(model, { prompt: "waves at dusk", seconds: 4 })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false })
      expect(error.message).toContain("removed the Videos API")
      expect(error.message).toContain("veo or openrouter")
    }
    expect(sim.counters.requests).toBe(0)
  })

  it("a video handle kept from before the retirement fails its job when polled, without a request", async () => {
    const error = await failureOf(provider.poll({ id: "video_68d7512d07848190" }, requestFor("sora-2", {})))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false })
    expect(error.message).toContain("removed the Videos API")
    expect(sim.counters.requests).toBe(0)
  })
})

describe("OpenAI errors", () => {
  it("429 three times: three retryable rejections with Retry-After, then the start goes through once", async () => {
    sim.rateLimitNext(3, { retryAfterSeconds: 2 })
    for (let i = 0; i < 3; i++) {
      const error = await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "patience" })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, retryAfterMs: 2_000, httpStatus: 429 })
      expect(error.message).toContain("Rate limit reached")
    }
    expect((await start("gpt-image-1", { prompt: "patience" }))._tag).toBe("Finished")
    expect([sim.counters.rateLimited, sim.counters.starts]).toEqual([3, 1])
  })

  it("without Retry-After, the reset time of the exhausted limit says when to ask again", async () => {
    sim.rateLimitNext(1, {
      headers: {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1m30s",
        "x-ratelimit-remaining-tokens": "9000",
        "x-ratelimit-reset-tokens": "6m0s"
      }
    })
    const error = await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(error).toMatchObject({ retryable: true, retryAfterMs: 90_000 })
  })

  it("a 5xx (overloaded) is retryable", async () => {
    sim.errorNext(1, 503, { message: "The engine is currently overloaded, please try again later" })
    const error = await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, httpStatus: 503 })
    expect(error.message).toBe("OpenAI answered HTTP 503: The engine is currently overloaded, please try again later")
    sim.errorNext(1, 500)
    expect(await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "x" })))).toMatchObject({ retryable: true, httpStatus: 500 })
  })

  it("a wrong key is a permanent 401 whose message does not repeat the key, even when OpenAI quotes it", async () => {
    const key = "sk-wrong-secret-0123456789"
    const wrong = openaiProvider({ apiKey: key, baseUrl: sim.url })
    const error = await failureOf(wrong.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 401 })
    expect(error.message).toContain("Incorrect API key provided: [redacted]")
    expect(JSON.stringify(error)).not.toContain(key)
  })

  it("a long message is cut after its key is taken out, so no part of the key is left", async () => {
    sim.errorNext(1, 400, { message: `${"x".repeat(495)}${sim.apiKey} and more` })
    const error = await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(error.message).toContain("x".repeat(495))
    expect(error.message).not.toContain(sim.apiKey.slice(0, 4))
  })

  it("a provider that cannot be reached, or does not answer in time, is ProviderUnreachable", async () => {
    const gone = await startOpenAISimulator()
    await gone.close()
    const unreachable = openaiProvider({ apiKey: "sk-some-key-abc", baseUrl: gone.url })
    const error = await failureOf(unreachable.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(error._tag).toBe("ProviderUnreachable")
    expect(error.message).toContain("OpenAI could not be reached")
    expect(error.message).not.toContain("sk-some-key-abc")

    sim.slowNext(1, 2_000)
    const impatient = openaiProvider({ apiKey: sim.apiKey, baseUrl: sim.url, imageRequestTimeoutMs: 200 })
    const late = await failureOf(impatient.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(late).toMatchObject({ _tag: "ProviderUnreachable", message: "OpenAI did not answer within 200 ms" })
  })

  it("a body that is not the documented JSON is ProviderUnreachable, never a crash", async () => {
    sim.malformedNext(1)
    const error = await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(error._tag).toBe("ProviderUnreachable")
    expect(error.message).toContain("OpenAI answered HTTP 200 with a body it does not document")
  })
})
