/**
 * The OpenAI adapter against the OpenAI simulator: images answered within the start, Sora videos
 * created, polled and fetched with the key only in the content source's headers, OpenAI's errors
 * typed as retryable or permanent, and the key never in a message or a handle.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { openaiProvider } from "genjobs/providers/openai"
import type { GenerationProvider, ProviderHandle, ProviderStatus, StartOutcome } from "../../src/ports/Provider.js"
import { type OpenAISimulator, startOpenAISimulator } from "../simulators/openai.js"
import { bytesOf, failureOf, requestFor, sleep } from "./support.js"

const VIDEO_BYTES = 300_000
let sim: OpenAISimulator
let provider: GenerationProvider

beforeAll(async () => {
  sim = await startOpenAISimulator({ durationMs: 300, videoBytes: VIDEO_BYTES })
  provider = openaiProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 5_000 })
})
afterAll(() => sim.close())
beforeEach(() => sim.reset())

const start = (providerModel: string, input: Record<string, unknown>, on = provider) =>
  Effect.runPromise(on.start(requestFor(providerModel, input)))

const startedHandle = (outcome: StartOutcome): ProviderHandle => {
  if (outcome._tag !== "Started") throw new Error(`expected Started, got ${JSON.stringify(outcome)}`)
  return outcome.handle
}

/** Polls as the engine would until the generation is no longer running. */
const settle = async (handle: ProviderHandle, seen: Array<ProviderStatus> = []) => {
  for (let i = 0; i < 200; i++) {
    const status = await Effect.runPromise(provider.poll(handle, requestFor("sora-2", {})))
    seen.push(status)
    if (status._tag !== "Running") return status
    await sleep(25)
  }
  throw new Error("the video never finished")
}

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

describe("OpenAI Videos API (asynchronous)", () => {
  it("creates a Sora video, polls it queued -> in progress -> completed, and hands its content over with the key in headers only", async () => {
    const outcome = await start("sora-2", { prompt: "waves at dusk", seconds: 4, size: "1280x720" })
    const handle = startedHandle(outcome)
    expect(handle.id).toMatch(/^video_/)
    // The API takes seconds as a string; the catalog's number is sent as one.
    expect(sim.bodies.at(-1)).toMatchObject({ model: "sora-2", seconds: "4", size: "1280x720" })

    const seen: Array<ProviderStatus> = []
    const status = await settle(handle, seen)
    expect(seen[0]!._tag).toBe("Running")
    expect(seen.filter((s) => s._tag === "Running").every((s) => s._tag === "Running" && (s.progress ?? 0) <= 100)).toBe(true)
    if (status._tag !== "Succeeded") throw new Error(JSON.stringify(status))
    const [output] = status.outputs
    expect([output!.type, output!.contentType, output!.metadata]).toEqual(["video", "video/mp4", { seconds: "4", size: "1280x720" }])
    if (output!.source._tag !== "Url") throw new Error("expected a URL source")
    expect(output!.source.url).toBe(`${sim.url}/videos/${handle.id}/content`)
    expect(output!.source.headers).toEqual({ authorization: `Bearer ${sim.apiKey}` })

    const video = await Effect.runPromise(bytesOf(output!.source))
    expect([video.contentType, video.bytes.length, video.bytes.subarray(4, 8).toString()]).toEqual(["video/mp4", VIDEO_BYTES, "ftyp"])
    expect((await fetch(output!.source.url)).status).toBe(401)
    const thumbnail = await Effect.runPromise(bytesOf(output!.thumbnail!))
    expect(thumbnail.contentType).toBe("image/webp")

    // What the engine stores: the handle and the metadata, never the key.
    expect(JSON.stringify(handle)).not.toContain(sim.apiKey)
    expect(JSON.stringify(output!.metadata)).not.toContain(sim.apiKey)
    expect(sim.counters.starts).toBe(1)
  })

  it("a video that fails at OpenAI ends Failed with OpenAI's reason", async () => {
    const handle = startedHandle(await start("sora-2", { prompt: "[fail] a storm" }))
    const status = await settle(handle)
    expect(status).toEqual({
      _tag: "Failed",
      message: "OpenAI could not generate the video: The video could not be generated for this prompt. (video_generation_failed)"
    })
  })

  it("an input the API refuses is permanent, with OpenAI's message", async () => {
    const error = await failureOf(provider.start(requestFor("sora-2", { prompt: "x", seconds: 5 })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 400 })
    expect(error.message).toContain("Invalid value for 'seconds'")
  })

  it("cancel asks nothing of OpenAI: it documents no way to stop a video in progress", async () => {
    const handle = startedHandle(await start("sora-2", { prompt: "a long take" }))
    await Effect.runPromise(provider.cancel(handle, requestFor("sora-2", {})))
    expect(sim.counters.cancels).toBe(0)
  })
})

describe("OpenAI errors", () => {
  it("429 three times: three retryable rejections with Retry-After, then the start goes through once", async () => {
    sim.rateLimitNext(3, { retryAfterSeconds: 2 })
    for (let i = 0; i < 3; i++) {
      const error = await failureOf(provider.start(requestFor("sora-2", { prompt: "patience" })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, retryAfterMs: 2_000, httpStatus: 429 })
      expect(error.message).toContain("Rate limit reached")
    }
    startedHandle(await start("sora-2", { prompt: "patience" }))
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

  it("a 5xx (overloaded) is retryable, on start and on poll", async () => {
    sim.errorNext(1, 503, { message: "The engine is currently overloaded, please try again later" })
    const error = await failureOf(provider.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, httpStatus: 503 })
    expect(error.message).toBe("OpenAI answered HTTP 503: The engine is currently overloaded, please try again later")
    const handle = startedHandle(await start("sora-2", { prompt: "x" }))
    sim.errorNext(1, 500)
    expect(await failureOf(provider.poll(handle, requestFor("sora-2", {})))).toMatchObject({ retryable: true, httpStatus: 500 })
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
    const error = await failureOf(unreachable.start(requestFor("sora-2", { prompt: "x" })))
    expect(error._tag).toBe("ProviderUnreachable")
    expect(error.message).toContain("OpenAI could not be reached")
    expect(error.message).not.toContain("sk-some-key-abc")
    expect((await failureOf(unreachable.poll({ id: "video_1" }, requestFor("sora-2", {}))))._tag).toBe("ProviderUnreachable")

    sim.slowNext(1, 2_000)
    const impatient = openaiProvider({ apiKey: sim.apiKey, baseUrl: sim.url, imageRequestTimeoutMs: 200 })
    const late = await failureOf(impatient.start(requestFor("gpt-image-1", { prompt: "x" })))
    expect(late).toMatchObject({ _tag: "ProviderUnreachable", message: "OpenAI did not answer within 200 ms" })
  })

  it("a body that is not the documented JSON is ProviderUnreachable, never a crash", async () => {
    sim.malformedNext(1)
    const error = await failureOf(provider.start(requestFor("sora-2", { prompt: "x" })))
    expect(error._tag).toBe("ProviderUnreachable")
    expect(error.message).toContain("OpenAI answered HTTP 200 with a body it does not document")
    const handle = startedHandle(await start("sora-2", { prompt: "x" }))
    sim.malformedNext(1)
    expect((await failureOf(provider.poll(handle, requestFor("sora-2", {}))))._tag).toBe("ProviderUnreachable")
  })

  it("an unknown video is a permanent rejection", async () => {
    const error = await failureOf(provider.poll({ id: "video_missing" }, requestFor("sora-2", {})))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 404 })
  })
})
