/**
 * The OpenRouter adapter against the OpenRouter simulator: a video job submitted, polled to its
 * content URL and downloaded with the key; failures as job failures; a handle that outlives the
 * process; signed callbacks verified over the raw body (a bad signature, a stale timestamp and a
 * tampered body refused); OpenRouter's errors typed as retryable or permanent, the key never in a
 * message.
 */
import { Effect, Schema } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { openRouterProvider } from "genjobs/providers/openrouter"
import { type GenerationProvider, ProviderHandle, type ProviderStatus } from "../../src/ports/Provider.js"
import { type OpenRouterSimulator, signOpenRouterWebhook, startOpenRouterSimulator } from "../simulators/openrouter.js"
import { bytesOf, closedPort, failureOf, pollUntilDone, requestFor, started, startReceiver } from "./support.js"

const MODEL = "google/veo-3.1"
const VIDEO_BYTES = 300_000
let sim: OpenRouterSimulator
let receiver: Awaited<ReturnType<typeof startReceiver>>
let provider: GenerationProvider

beforeAll(async () => {
  sim = await startOpenRouterSimulator({ durationMs: 300, videoBytes: VIDEO_BYTES })
  receiver = await startReceiver()
  provider = openRouterProvider({ apiKey: sim.apiKey, baseUrl: sim.url, webhookSecret: sim.webhookSecret, requestTimeoutMs: 5_000 })
})
afterAll(async () => {
  await sim.close()
  await receiver.close()
})
beforeEach(() => sim.reset())

const startHandle = (input: Record<string, unknown>, options: { readonly callbackUrl?: string } = {}, on = provider) =>
  Effect.runPromise(started(on, requestFor(MODEL, input, options)))
const settle = (handle: ProviderHandle, on = provider): Promise<ProviderStatus> =>
  Effect.runPromise(pollUntilDone(on, handle, requestFor(MODEL, {})))
const encode = (text: string) => new TextEncoder().encode(text)

describe("OpenRouter video jobs", () => {
  it("submits a job with the model, polls it to completed, and hands the video over with the key in the download's headers only", async () => {
    const handle = await startHandle({ prompt: "a golden retriever on a beach", duration: 8, resolution: "720p" })
    expect(handle).toEqual({ id: expect.stringMatching(/^job-/) })
    expect(sim.bodies.at(-1)).toEqual({ prompt: "a golden retriever on a beach", duration: 8, resolution: "720p", model: MODEL })

    const status = await settle(handle)
    if (status._tag !== "Succeeded") throw new Error(JSON.stringify(status))
    const [output] = status.outputs
    expect([status.outputs.length, output!.type, output!.contentType, output!.metadata]).toEqual([
      1,
      "video",
      "video/mp4",
      { generationId: `gen-${handle.id}` }
    ])
    if (output!.source._tag !== "Url") throw new Error("expected a URL source")
    expect(output!.source.url).toBe(`${sim.url}/videos/${handle.id}/content?index=0`)
    expect(output!.source.headers).toEqual({ authorization: `Bearer ${sim.apiKey}` })
    const video = await Effect.runPromise(bytesOf(output!.source))
    expect([video.contentType, video.bytes.length, video.bytes.subarray(4, 8).toString()]).toEqual(["video/mp4", VIDEO_BYTES, "ftyp"])
    expect((await fetch(output!.source.url)).status).toBe(401)
    expect(JSON.stringify(handle)).not.toContain(sim.apiKey)
    expect([sim.counters.starts, sim.counters.downloads]).toEqual([1, 1])
  })

  it("follows a stored handle after a restart: a new provider polls the job by its id to its video", async () => {
    const handle = await startHandle({ prompt: "a restart mid-generation" })
    const stored = Schema.decodeUnknownSync(Schema.fromJsonString(ProviderHandle))(JSON.stringify(handle))
    const restarted = openRouterProvider({ apiKey: sim.apiKey, baseUrl: sim.url })
    const status = await settle(stored, restarted)
    if (status._tag !== "Succeeded") throw new Error(JSON.stringify(status))
    expect((await Effect.runPromise(bytesOf(status.outputs[0]!.source))).bytes.length).toBe(VIDEO_BYTES)
    expect(sim.counters.starts).toBe(1)
  })

  it("a job that fails at OpenRouter fails with its error", async () => {
    const handle = await startHandle({ prompt: "[fail] a storm" })
    expect(await settle(handle)).toEqual({
      _tag: "Failed",
      message: "OpenRouter could not generate the video: The upstream provider could not render this prompt."
    })
  })

  it("cancel asks nothing of OpenRouter, which documents no way to stop a video job", async () => {
    const handle = await startHandle({ prompt: "a long take" })
    const before = sim.counters.requests
    await Effect.runPromise(provider.cancel(handle, requestFor(MODEL, {})))
    expect(sim.counters.requests).toBe(before)
  })
})

describe("OpenRouter callbacks", () => {
  it("asks for a callback, and the signed event it sends verifies over the raw body, naming the job", async () => {
    const callbackUrl = `${receiver.url}/v1/providers/openrouter/callbacks/job_1`
    const before = receiver.received.length
    const handle = await startHandle({ prompt: "call me back" }, { callbackUrl })
    expect(sim.bodies.at(-1)).toMatchObject({ callback_url: callbackUrl })
    const callback = await receiver.nth(before + 1)
    expect(callback.headers["x-openrouter-idempotency-key"]).toBe(`${handle.id}-completed`)
    expect(await Effect.runPromise(provider.verifyCallback!(callback))).toEqual({ handleId: handle.id })
  })

  it("refuses a bad signature, a stale or future timestamp, a tampered body and a missing header", async () => {
    const body = JSON.stringify({ type: "video.generation.completed", data: { id: "job-1", status: "completed" } })
    const now = Math.floor(Date.now() / 1000)
    const verify = (headers: Record<string, string>, raw = body) =>
      Effect.runPromise(Effect.result(provider.verifyCallback!({ headers, body: encode(raw) })))

    const good = signOpenRouterWebhook(body, sim.webhookSecret)
    expect(await verify(good)).toMatchObject({ _tag: "Success", success: { handleId: "job-1" } })
    // Header names arrive in any case.
    expect(await verify({ "X-OpenRouter-Signature": good["x-openrouter-signature"]! })).toMatchObject({ _tag: "Success" })

    const refusals: Array<[Record<string, string>, string, string]> = [
      [signOpenRouterWebhook(body, "another-secret"), body, "no v1 signature matches"],
      [signOpenRouterWebhook(body, sim.webhookSecret, { timestampSeconds: now - 6 * 60 }), body, "more than 5 minutes"],
      [signOpenRouterWebhook(body, sim.webhookSecret, { timestampSeconds: now + 6 * 60 }), body, "more than 5 minutes"],
      [good, body.replace("job-1", "job-2"), "no v1 signature matches"],
      [{ "x-openrouter-signature": good["x-openrouter-signature"]!.replace(/v1=[0-9a-f]{4}/, "v1=0000") }, body, "no v1 signature matches"],
      [{ "x-openrouter-signature": `t=${now}` }, body, "must carry t=<timestamp> and v1=<signature>"],
      [{}, body, "header is required"]
    ]
    for (const [headers, raw, reason] of refusals) {
      const outcome = await verify(headers, raw)
      if (outcome._tag !== "Failure") throw new Error(`accepted: ${JSON.stringify(headers)}`)
      expect(outcome.failure).toMatchObject({ _tag: "CallbackRejected" })
      expect(outcome.failure.message).toContain(reason)
    }
  })

  it("a signed body that is not a video event is refused", async () => {
    const body = JSON.stringify({ hello: "world" })
    const outcome = await Effect.runPromise(
      Effect.result(provider.verifyCallback!({ headers: signOpenRouterWebhook(body, sim.webhookSecret), body: encode(body) }))
    )
    expect(outcome).toMatchObject({ _tag: "Failure", failure: { message: "OpenRouter webhook refused: the body is not a video generation event" } })
  })

  it("without a webhook secret nothing is asked to call back, and no callback is taken", async () => {
    const polled = openRouterProvider({ apiKey: sim.apiKey, baseUrl: sim.url })
    expect(polled.verifyCallback).toBeUndefined()
    await startHandle({ prompt: "polled" }, { callbackUrl: `${receiver.url}/unused` }, polled)
    expect(sim.bodies.at(-1)).not.toHaveProperty("callback_url")
  })
})

describe("OpenRouter errors", () => {
  it("429 three times: three retryable rejections after Retry-After, then one job", async () => {
    sim.rateLimitNext(3, { retryAfterSeconds: 3, on: "start" })
    for (let i = 0; i < 3; i++) {
      const error = await failureOf(provider.start(requestFor(MODEL, { prompt: "patience" })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, retryAfterMs: 3_000, httpStatus: 429 })
    }
    await startHandle({ prompt: "patience" })
    expect([sim.counters.rateLimited, sim.counters.starts]).toEqual([3, 1])
  })

  it("moderation (403) and no credits (402) are permanent with OpenRouter's message; 503 retryable; 502 on a submit leaves it unknown", async () => {
    const flagged = await failureOf(provider.start(requestFor(MODEL, { prompt: "[reject] this" })))
    expect(flagged).toMatchObject({
      _tag: "ProviderRejected",
      retryable: false,
      httpStatus: 403,
      message: "OpenRouter answered HTTP 403: Your input was flagged by moderation."
    })
    sim.errorNext(1, 402, { message: "Insufficient credits", on: "start" })
    expect(await failureOf(provider.start(requestFor(MODEL, { prompt: "x" })))).toMatchObject({ retryable: false, httpStatus: 402 })
    sim.errorNext(1, 503, { message: "No available provider", on: "start" })
    expect(await failureOf(provider.start(requestFor(MODEL, { prompt: "x" })))).toMatchObject({ retryable: true, httpStatus: 503 })
    sim.errorNext(1, 502, { message: "Upstream error", on: "start" })
    expect((await failureOf(provider.start(requestFor(MODEL, { prompt: "x" }))))._tag).toBe("ProviderUnreachable")
    expect(sim.counters.starts).toBe(0)
  })

  it("a wrong key is permanent and its message never repeats the key", async () => {
    const key = "sk-or-v1-wrong-0123456789"
    const error = await failureOf(openRouterProvider({ apiKey: key, baseUrl: sim.url }).start(requestFor(MODEL, { prompt: "x" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 401 })
    expect(error.message).toBe("OpenRouter answered HTTP 401: User not found for key [redacted]")
  })

  it("a model id that is not owner/name is refused before any request; an unknown job is permanent", async () => {
    for (const model of ["veo-3.1", "../videos", "google/veo 3"]) {
      expect(await failureOf(provider.start(requestFor(model, { prompt: "x" })))).toMatchObject({ _tag: "ProviderRejected", retryable: false })
    }
    expect(sim.counters.requests).toBe(0)
    expect(await failureOf(provider.poll({ id: "job-missing" }, requestFor(MODEL, {})))).toMatchObject({ retryable: false, httpStatus: 404 })
  })

  it("no answer, a late answer and an undocumented body are ProviderUnreachable", async () => {
    const closed = openRouterProvider({ apiKey: "sk-or-v1-some", baseUrl: `http://127.0.0.1:${await closedPort()}/api/v1` })
    const error = await failureOf(closed.start(requestFor(MODEL, { prompt: "x" })))
    expect(error._tag).toBe("ProviderUnreachable")
    expect(error.message).toContain("OpenRouter could not be reached")

    const handle = await startHandle({ prompt: "x" })
    sim.slowNext(1, 2_000, { on: "poll" })
    const impatient = openRouterProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 100 })
    expect(await failureOf(impatient.poll(handle, requestFor(MODEL, {})))).toMatchObject({
      _tag: "ProviderUnreachable",
      message: "OpenRouter did not answer within 100 ms"
    })
    sim.malformedNext(1, { on: "poll" })
    expect((await failureOf(provider.poll(handle, requestFor(MODEL, {}))))._tag).toBe("ProviderUnreachable")
  })
})
