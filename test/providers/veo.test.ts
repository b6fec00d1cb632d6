/**
 * The Veo adapter against the Gemini API simulator: an operation started with the job's input
 * split into instance and parameters, polled until done, its video handed over with the key in
 * the download's headers only; operation errors and safety filters as job failures; a handle that
 * outlives the process; Google's errors typed as retryable or permanent, the key never in a message.
 */
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { veoProvider } from "genjobs/providers/veo"
import { type GenerationProvider, ProviderHandle, type ProviderStatus } from "../../src/ports/Provider.js"
import { startVeoSimulator, type VeoSimulator } from "../simulators/veo.js"
import { bytesOf, closedPort, failureOf, pollUntilDone, requestFor, started } from "./support.js"

const MODEL = "veo-3.1-generate-preview"
const VIDEO_BYTES = 300_000
let sim: VeoSimulator
let provider: GenerationProvider

beforeAll(async () => {
  sim = await startVeoSimulator({ durationMs: 300, videoBytes: VIDEO_BYTES })
  provider = veoProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 5_000 })
})
afterAll(() => sim.close())
beforeEach(() => sim.reset())

const startHandle = (input: Record<string, unknown>, on = provider) => Effect.runPromise(started(on, requestFor(MODEL, input)))
const settle = (handle: ProviderHandle, on = provider): Promise<ProviderStatus> =>
  Effect.runPromise(pollUntilDone(on, handle, requestFor(MODEL, {})))

describe("Veo through the Gemini API", () => {
  it("starts an operation, polls it until done, and hands the video over with the key in the download's headers only", async () => {
    const handle = await startHandle({ prompt: "waves at dusk", aspectRatio: "16:9", durationSeconds: 8, negativePrompt: "people" })
    expect(handle).toEqual({ id: expect.stringMatching(new RegExp(`^models/${MODEL}/operations/\\w+$`)) })
    // The job's flat input is split as the API takes it: the prompt in the instance, the rest as parameters.
    expect(sim.requests.at(-1)).toEqual({
      model: MODEL,
      body: { instances: [{ prompt: "waves at dusk" }], parameters: { aspectRatio: "16:9", durationSeconds: 8, negativePrompt: "people" } }
    })
    expect(await Effect.runPromise(provider.poll(handle, requestFor(MODEL, {})))).toEqual({ _tag: "Running" })

    const status = await settle(handle)
    if (status._tag !== "Succeeded") throw new Error(JSON.stringify(status))
    const [output] = status.outputs
    expect([status.outputs.length, output!.type, output!.contentType]).toEqual([1, "video", "video/mp4"])
    if (output!.source._tag !== "Url") throw new Error("expected a URL source")
    expect(output!.source.headers).toEqual({ "x-goog-api-key": sim.apiKey })
    const video = await Effect.runPromise(bytesOf(output!.source))
    expect([video.contentType, video.bytes.length, video.bytes.subarray(4, 8).toString()]).toEqual(["video/mp4", VIDEO_BYTES, "ftyp"])
    // The file URI alone is refused: the key is what downloads it.
    expect((await fetch(output!.source.url)).status).toBe(400)
    expect(JSON.stringify(handle)).not.toContain(sim.apiKey)
    expect([sim.counters.starts, sim.counters.downloads]).toEqual([1, 1])
  })

  it("follows a stored handle after a restart: a new provider polls the operation by its name to its video", async () => {
    const handle = await startHandle({ prompt: "a restart mid-generation" })
    // What the engine keeps with the job, read back in a process that never saw the start.
    const stored = Schema.decodeUnknownSync(Schema.fromJsonString(ProviderHandle))(JSON.stringify(handle))
    const restarted = veoProvider({ apiKey: sim.apiKey, baseUrl: sim.url })
    const status = await settle(stored, restarted)
    if (status._tag !== "Succeeded") throw new Error(JSON.stringify(status))
    expect((await Effect.runPromise(bytesOf(status.outputs[0]!.source))).bytes.length).toBe(VIDEO_BYTES)
    expect(sim.counters.starts).toBe(1)
  })

  it("an operation that ends with an error fails the job with Google's message", async () => {
    const handle = await startHandle({ prompt: "[fail] a storm" })
    expect(await settle(handle)).toEqual({
      _tag: "Failed",
      message: "Veo could not generate the video: The prompt could not be rendered into a video. (3)",
      providerCode: "INVALID_ARGUMENT"
    })
  })

  it("an operation whose video the safety filters removed fails the job with their reasons", async () => {
    const handle = await startHandle({ prompt: "[filtered] a crowd" })
    expect(await settle(handle)).toEqual({
      _tag: "Failed",
      message: "Veo's safety filters removed the video: The video was filtered because it may violate the usage guidelines.",
      contentBlocked: true
    })
  })

  it("cancel asks nothing of the Gemini API, which documents no way to stop a video operation", async () => {
    const handle = await startHandle({ prompt: "a long take" })
    const before = sim.counters.requests
    await Effect.runPromise(provider.cancel(handle, requestFor(MODEL, {})))
    expect(sim.counters.requests).toBe(before)
  })
})

describe("Gemini API errors", () => {
  it("429 three times: three retryable rejections after Retry-After, then one operation", async () => {
    sim.rateLimitNext(3, { retryAfterSeconds: 4, on: "start" })
    for (let i = 0; i < 3; i++) {
      const error = await failureOf(provider.start(requestFor(MODEL, { prompt: "patience" })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, retryAfterMs: 4_000, httpStatus: 429 })
      expect(error.message).toBe("Gemini API answered HTTP 429: Rate limit reached, please try again later")
    }
    await startHandle({ prompt: "patience" })
    expect([sim.counters.rateLimited, sim.counters.starts]).toEqual([3, 1])
  })

  it("a refused input or an unknown model is permanent, with Google's message; a 5xx on a poll is retryable", async () => {
    const refused = await failureOf(provider.start(requestFor(MODEL, { prompt: "[reject] this" })))
    expect(refused).toMatchObject({
      _tag: "ProviderRejected",
      retryable: false,
      httpStatus: 400,
      message: "Gemini API answered HTTP 400: The prompt was blocked by the safety filters."
    })
    const unknown = await failureOf(provider.start(requestFor("imagen-4", { prompt: "x" })))
    expect(unknown).toMatchObject({ retryable: false, httpStatus: 404 })
    expect(sim.counters.starts).toBe(0)

    const handle = await startHandle({ prompt: "x" })
    sim.errorNext(1, 503, { message: "The model is overloaded. Please try again later.", on: "poll" })
    expect(await failureOf(provider.poll(handle, requestFor(MODEL, {})))).toMatchObject({ retryable: true, httpStatus: 503 })
  })

  it("a wrong key is permanent and its message never repeats the key, even when it is quoted back", async () => {
    const key = "AIza-wrong-key-0123456789"
    const error = await failureOf(veoProvider({ apiKey: key, baseUrl: sim.url }).start(requestFor(MODEL, { prompt: "x" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 400 })
    expect(error.message).toContain("API key not valid")
    expect(error.message).toContain("[redacted]")
    expect(JSON.stringify(error)).not.toContain(key)
  })

  it("a model id or an operation name that could leave the API's path is refused before any request", async () => {
    for (const model of ["../files/x", "veo 3", "models/veo/../x"]) {
      expect(await failureOf(provider.start(requestFor(model, { prompt: "x" })))).toMatchObject({ _tag: "ProviderRejected", retryable: false })
    }
    for (const id of ["../v1beta/files/x", "models/veo/operations/..", "models//operations/x"]) {
      expect(await failureOf(provider.poll({ id }, requestFor(MODEL, {})))).toMatchObject({ _tag: "ProviderRejected", retryable: false })
    }
    expect(sim.counters.requests).toBe(0)
  })

  it("no answer, a late answer and an undocumented body are ProviderUnreachable", async () => {
    const closed = veoProvider({ apiKey: "AIza-some-key", baseUrl: `http://127.0.0.1:${await closedPort()}` })
    const error = await failureOf(closed.start(requestFor(MODEL, { prompt: "x" })))
    expect(error._tag).toBe("ProviderUnreachable")
    expect(error.message).toContain("Gemini API could not be reached")

    sim.slowNext(1, 2_000, { on: "poll" })
    const handle = await startHandle({ prompt: "x" })
    const impatient = veoProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 100 })
    expect(await failureOf(impatient.poll(handle, requestFor(MODEL, {})))).toMatchObject({
      _tag: "ProviderUnreachable",
      message: "Gemini API did not answer within 100 ms"
    })

    sim.malformedNext(1, { on: "start" })
    expect((await failureOf(provider.start(requestFor(MODEL, { prompt: "x" }))))._tag).toBe("ProviderUnreachable")
  })
})
