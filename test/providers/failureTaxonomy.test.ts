/**
 * The failure taxonomy (issue 38) per adapter, on its simulator: each documented provider
 * failure, as the adapter reports it, gets the type and retryability the engine's one mapping
 * (classifyFailure) gives it. The adapters report facts only; the type is decided in src/.
 */
import { APICallError } from "@ai-sdk/provider"
import { MockImageModelV4 } from "ai/test"
import { Effect } from "effect"
import { aiSdkProvider } from "genjobs/providers/ai-sdk"
import { falProvider } from "genjobs/providers/fal"
import { openaiProvider } from "genjobs/providers/openai"
import { openRouterProvider } from "genjobs/providers/openrouter"
import { replicateProvider } from "genjobs/providers/replicate"
import { runwayProvider } from "genjobs/providers/runway"
import { veoProvider } from "genjobs/providers/veo"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { classifyFailure, type FailureClass } from "../../src/domain/failureTaxonomy.js"
import { factOfError, factOfFailed, type GenerationProvider, type ProviderError, type ProviderStatus } from "../../src/ports/Provider.js"
import { type FalSimulator, startFalSimulator } from "../simulators/fal.js"
import { type OpenAISimulator, startOpenAISimulator } from "../simulators/openai.js"
import { type OpenRouterSimulator, startOpenRouterSimulator } from "../simulators/openrouter.js"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { type RunwaySimulator, startRunwaySimulator } from "../simulators/runway.js"
import { startVeoSimulator, type VeoSimulator } from "../simulators/veo.js"
import { failureOf, pollUntilDone, requestFor, started } from "./support.js"

/** The class the engine gives an error an adapter answered with. */
const classOfError = (error: ProviderError): FailureClass => classifyFailure(factOfError(error))

/** The class the engine gives a generation that ended without a result. */
const classOfStatus = (status: ProviderStatus): FailureClass => {
  if (status._tag !== "Failed") throw new Error(`expected Failed, got ${JSON.stringify(status)}`)
  return classifyFailure(factOfFailed(status))
}

/** Starts on `provider` and polls the generation to its end. */
const ended = (provider: GenerationProvider, model: string, input: Record<string, unknown>) =>
  Effect.runPromise(Effect.gen(function*() {
    const request = requestFor(model, input)
    const handle = yield* started(provider, request)
    return yield* pollUntilDone(provider, handle, request)
  }))

const startError = (provider: GenerationProvider, model: string, input: Record<string, unknown>) =>
  failureOf(provider.start(requestFor(model, input)))

const contentBlocked = { type: "content_blocked", retryable: false }
const inputRejected = { type: "input_rejected", retryable: false }
const rateLimited = { type: "rate_limited", retryable: true }
const unavailable = { type: "provider_unavailable", retryable: true }
const timedOut = { type: "provider_timeout", retryable: true }

describe("Replicate", () => {
  let sim: ReplicateSimulator
  let provider: GenerationProvider
  beforeAll(async () => {
    sim = await startReplicateSimulator({ durationMs: 50 })
    provider = replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url, requestTimeoutMs: 2000 })
  })
  afterAll(() => sim.close())

  it("a prediction its safety checker failed (NSFW) is content_blocked", async () => {
    const status = await ended(provider, "acme/image-gen", { prompt: "x", sim_fail: "NSFW content detected. Try running it again, or try a different prompt." })
    expect(classOfStatus(status)).toEqual(contentBlocked)
  })

  it("a prediction that failed for another reason is provider_unavailable, retryable", async () => {
    expect(classOfStatus(await ended(provider, "acme/image-gen", { prompt: "x", sim_fail: "CUDA out of memory" }))).toEqual(unavailable)
  })

  it("a refused input (422), a rate limit (429) and no answer in time", async () => {
    sim.errorNext(1, 422, { message: "- input.width: Must be less than or equal to 1440", on: "start" })
    expect(classOfError(await startError(provider, "acme/image-gen", { prompt: "x" }))).toEqual(inputRejected)
    sim.rateLimitNext(1, { on: "start" })
    expect(classOfError(await startError(provider, "acme/image-gen", { prompt: "x" }))).toEqual(rateLimited)
    const impatient = replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url, requestTimeoutMs: 100 })
    sim.slowNext(1, 1_000, { on: "start" })
    expect(classOfError(await startError(impatient, "acme/image-gen", { prompt: "x" }))).toEqual(timedOut)
  })
})

describe("fal.ai", () => {
  let sim: FalSimulator
  let provider: GenerationProvider
  beforeAll(async () => {
    sim = await startFalSimulator({ durationMs: 50 })
    provider = falProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 2000 })
  })
  afterAll(() => sim.close())

  it("a model error of type content_policy_violation is content_blocked; image_too_small is input_rejected", async () => {
    const blocked = await ended(provider, "fal-ai/flux/dev", { prompt: "x", sim_fail: "The content was flagged by a content checker.", sim_fail_code: "content_policy_violation" })
    expect(blocked).toMatchObject({ _tag: "Failed", providerCode: "content_policy_violation", contentBlocked: true, httpStatus: 422 })
    expect(classOfStatus(blocked)).toEqual(contentBlocked)
    const small = await ended(provider, "fal-ai/flux/dev", { prompt: "x", sim_fail: "Image too small", sim_fail_code: "image_too_small" })
    expect(classOfStatus(small)).toEqual(inputRejected)
  })

  it("request errors by X-Fal-Error-Type: generation_timeout is provider_timeout, runner_scheduling_failure provider_unavailable", async () => {
    const request = requestFor("fal-ai/flux/dev", { prompt: "x" })
    const handle = await Effect.runPromise(started(provider, request))
    sim.errorNext(1, 504, {
      on: "poll",
      body: { detail: "The generation timed out", error_type: "generation_timeout" },
      headers: { "x-fal-error-type": "generation_timeout", "x-fal-retryable": "true" }
    })
    const timeout = await failureOf(provider.poll(handle, request))
    expect(timeout).toMatchObject({ _tag: "ProviderRejected", providerCode: "generation_timeout" })
    expect(classOfError(timeout)).toEqual(timedOut)
    // To a start, a gateway's 504 leaves the outcome open: no answer in time, the same type.
    sim.errorNext(1, 504, { on: "start", body: { detail: "The generation timed out", error_type: "generation_timeout" } })
    expect(classOfError(await startError(provider, "fal-ai/flux/dev", { prompt: "x" }))).toEqual(timedOut)
    sim.errorNext(1, 503, { on: "start", body: { detail: "No runner", error_type: "runner_scheduling_failure" } })
    expect(classOfError(await startError(provider, "fal-ai/flux/dev", { prompt: "x" }))).toEqual(unavailable)
  })
})

describe("OpenAI", () => {
  let sim: OpenAISimulator
  let provider: GenerationProvider
  beforeAll(async () => {
    sim = await startOpenAISimulator()
    provider = openaiProvider({ apiKey: sim.apiKey, baseUrl: sim.url, imageRequestTimeoutMs: 5_000 })
  })
  afterAll(() => sim.close())

  it("moderation_blocked is content_blocked; an invalid value input_rejected; a wrong key internal", async () => {
    const blocked = await startError(provider, "gpt-image-1", { prompt: "[reject] x" })
    expect(blocked).toMatchObject({ httpStatus: 400, providerCode: "moderation_blocked" })
    expect(classOfError(blocked)).toEqual(contentBlocked)
    expect(classOfError(await startError(provider, "dall-e-2", { prompt: "x", n: 99 }))).toEqual(inputRejected)
    const wrongKey = openaiProvider({ apiKey: "sk-wrong-0123456789", baseUrl: sim.url })
    expect(classOfError(await startError(wrongKey, "gpt-image-1", { prompt: "x" }))).toEqual({ type: "internal", retryable: false })
  })

  it("429 rate_limit_exceeded is rate_limited; 429 insufficient_quota is provider_unavailable and not retryable", async () => {
    sim.rateLimitNext(1)
    expect(classOfError(await startError(provider, "gpt-image-1", { prompt: "x" }))).toEqual(rateLimited)
    sim.errorNext(1, 429, { body: { error: { message: "You exceeded your current quota", type: "insufficient_quota", param: null, code: "insufficient_quota" } } })
    expect(classOfError(await startError(provider, "gpt-image-1", { prompt: "x" }))).toEqual({ type: "provider_unavailable", retryable: false })
  })
})

describe("Runway", () => {
  let sim: RunwaySimulator
  let provider: GenerationProvider
  beforeAll(async () => {
    sim = await startRunwaySimulator({ durationMs: 50, videoBytes: 1_000 })
    provider = runwayProvider({ apiSecret: sim.apiSecret, baseUrl: sim.url, requestTimeoutMs: 5_000 })
  })
  afterAll(() => sim.close())

  it("SAFETY.INPUT.TEXT is content_blocked; INTERNAL.BAD_OUTPUT is provider_unavailable, retryable", async () => {
    const blocked = await ended(provider, "gen4_image", { promptText: "[fail] a fox", ratio: "1024:1024" })
    expect(blocked).toMatchObject({ _tag: "Failed", providerCode: "SAFETY.INPUT.TEXT" })
    expect(classOfStatus(blocked)).toEqual(contentBlocked)
    const bad = await ended(provider, "gen4_image", { promptText: "[bad-output] a fox", ratio: "1024:1024" })
    expect(classOfStatus(bad)).toEqual(unavailable)
  })

  it("a body that fails validation (400) is input_rejected; 429 rate_limited", async () => {
    expect(classOfError(await startError(provider, "gen4_image", { promptText: "a fox" }))).toEqual(inputRejected)
    sim.rateLimitNext(1)
    expect(classOfError(await startError(provider, "gen4_image", { promptText: "a fox", ratio: "1024:1024" }))).toEqual(rateLimited)
  })
})

describe("Veo (Gemini API)", () => {
  let sim: VeoSimulator
  let provider: GenerationProvider
  beforeAll(async () => {
    sim = await startVeoSimulator({ durationMs: 50, videoBytes: 1_000 })
    provider = veoProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 5_000 })
  })
  afterAll(() => sim.close())
  const MODEL = "veo-3.1-generate-preview"

  it("samples the safety filters removed are content_blocked; an operation error by its code's name", async () => {
    const filtered = await ended(provider, MODEL, { prompt: "[filtered] a crowd" })
    expect(filtered).toMatchObject({ _tag: "Failed", contentBlocked: true })
    expect(classOfStatus(filtered)).toEqual(contentBlocked)
    const invalid = await ended(provider, MODEL, { prompt: "[fail] a storm" })
    expect(invalid).toMatchObject({ _tag: "Failed", providerCode: "INVALID_ARGUMENT" })
    expect(classOfStatus(invalid)).toEqual(inputRejected)
    expect(classOfStatus(await ended(provider, MODEL, { prompt: "[deadline] a storm" }))).toEqual(timedOut)
  })

  it("429 RESOURCE_EXHAUSTED is rate_limited; 503 UNAVAILABLE provider_unavailable", async () => {
    sim.rateLimitNext(1, { on: "start" })
    const limited = await startError(provider, MODEL, { prompt: "x" })
    expect(limited).toMatchObject({ providerCode: "RESOURCE_EXHAUSTED" })
    expect(classOfError(limited)).toEqual(rateLimited)
    sim.errorNext(1, 503, { on: "start" })
    expect(classOfError(await startError(provider, MODEL, { prompt: "x" }))).toEqual(unavailable)
  })
})

describe("OpenRouter", () => {
  let sim: OpenRouterSimulator
  let provider: GenerationProvider
  beforeAll(async () => {
    sim = await startOpenRouterSimulator({ durationMs: 50, videoBytes: 1_000 })
    provider = openRouterProvider({ apiKey: sim.apiKey, baseUrl: sim.url, requestTimeoutMs: 5_000 })
  })
  afterAll(() => sim.close())
  const MODEL = "google/veo-3.1"

  it("a moderation refusal (403 with reasons and flagged_input) is content_blocked; 402 out of credits is not retryable", async () => {
    const flagged = await startError(provider, MODEL, { prompt: "[reject] x" })
    expect(flagged).toMatchObject({ httpStatus: 403, contentBlocked: true })
    expect(classOfError(flagged)).toEqual(contentBlocked)
    sim.errorNext(1, 402, { on: "start", message: "Insufficient credits" })
    expect(classOfError(await startError(provider, MODEL, { prompt: "x" }))).toEqual({ type: "provider_unavailable", retryable: false })
  })

  it("a failed video job is provider_unavailable, retryable; 408 provider_timeout", async () => {
    expect(classOfStatus(await ended(provider, MODEL, { prompt: "[fail] a storm" }))).toEqual(unavailable)
    sim.errorNext(1, 408, { on: "start", message: "Your request timed out" })
    expect(classOfError(await startError(provider, MODEL, { prompt: "x" }))).toEqual(timedOut)
  })
})

describe("the AI SDK bridge", () => {
  const throwing = (error: unknown) =>
    aiSdkProvider({
      id: "mock",
      image: new MockImageModelV4({ provider: "mock.image", doGenerate: async () => Promise.reject(error) }),
      requestTimeoutMs: 200
    })
  const apiError = (statusCode: number, responseBody: string) =>
    new APICallError({ message: "refused", url: "http://127.0.0.1/x", requestBodyValues: {}, statusCode, responseBody, isRetryable: statusCode >= 500 || statusCode === 429 })

  it("a provider package's error body gives its code: content_policy_violation, rate_limit_exceeded", async () => {
    const blocked = await startError(throwing(apiError(400, JSON.stringify({ error: { message: "no", type: "invalid_request_error", code: "content_policy_violation" } }))), "m", { prompt: "x" })
    expect(blocked).toMatchObject({ providerCode: "content_policy_violation", httpStatus: 400 })
    expect(classOfError(blocked)).toEqual(contentBlocked)
    expect(classOfError(await startError(throwing(apiError(429, JSON.stringify({ error: { code: "rate_limit_exceeded" } }))), "m", { prompt: "x" }))).toEqual(rateLimited)
    expect(classOfError(await startError(throwing(apiError(422, "not json")), "m", { prompt: "x" }))).toEqual(inputRejected)
  })

  it("a model that does not answer within the request timeout is provider_timeout", async () => {
    const silent = aiSdkProvider({
      id: "mock",
      image: new MockImageModelV4({ provider: "mock.image", doGenerate: () => new Promise(() => undefined) }),
      requestTimeoutMs: 50
    })
    const error = await startError(silent, "m", { prompt: "x" })
    expect(error).toMatchObject({ _tag: "ProviderUnreachable", timedOut: true })
    expect(classOfError(error)).toEqual(timedOut)
  })
})
