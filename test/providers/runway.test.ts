/**
 * The Runway adapter against the Runway simulator: tasks created at the endpoint the catalog
 * names, polled through THROTTLED, PENDING and RUNNING to their outputs or their failure, cancelled
 * by deletion, Runway's errors typed as retryable or permanent, the secret never in a message.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { runwayProvider } from "genjobs/providers/runway"
import type { GenerationProvider, ProviderHandle, ProviderStatus, StartOutcome } from "../../src/ports/Provider.js"
import { type RunwaySimulator, startRunwaySimulator } from "../simulators/runway.js"
import { bytesOf, failureOf, requestFor, sleep } from "./support.js"

const IMAGE = "https://files.genjobs.test/first-frame.png"
let sim: RunwaySimulator
let provider: GenerationProvider

beforeAll(async () => {
  sim = await startRunwaySimulator({ durationMs: 600, concurrency: 1, videoBytes: 200_000 })
  provider = runwayProvider({ apiSecret: sim.apiSecret, baseUrl: sim.url, requestTimeoutMs: 5_000 })
})
afterAll(() => sim.close())
beforeEach(() => sim.reset())

const start = (providerModel: string, input: Record<string, unknown>) =>
  Effect.runPromise(provider.start(requestFor(providerModel, input)))

const startedHandle = (outcome: StartOutcome): ProviderHandle => {
  if (outcome._tag !== "Started") throw new Error(`expected Started, got ${JSON.stringify(outcome)}`)
  return outcome.handle
}

const poll = (handle: ProviderHandle, providerModel = "gen4_turbo") =>
  Effect.runPromise(provider.poll(handle, requestFor(providerModel, {})))

const settle = async (handle: ProviderHandle, seen: Array<ProviderStatus> = []) => {
  for (let i = 0; i < 400; i++) {
    const status = await poll(handle)
    seen.push(status)
    if (status._tag !== "Running") return status
    await sleep(20)
  }
  throw new Error("the task never finished")
}

/** The task as Runway reports it, read past the adapter. */
const rawStatus = async (handle: ProviderHandle) => {
  const response = await fetch(`${sim.url}/v1/tasks/${handle.id}`, {
    headers: { authorization: `Bearer ${sim.apiSecret}`, "x-runway-version": "2024-11-06" }
  })
  return ((await response.json()) as { status: string }).status
}

describe("Runway tasks", () => {
  it("image_to_video: a task created with the model, polled to SUCCEEDED, its video URL handed over", async () => {
    const handle = startedHandle(await start("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720", promptText: "waves" }))
    expect(handle.data).toEqual({ endpoint: "image_to_video" })
    expect(sim.creates.at(-1)).toEqual({
      endpoint: "image_to_video",
      body: { promptImage: IMAGE, ratio: "1280:720", promptText: "waves", model: "gen4_turbo" }
    })
    expect(JSON.stringify(handle)).not.toContain(sim.apiSecret)

    const seen: Array<ProviderStatus> = []
    const status = await settle(handle, seen)
    expect(seen.some((s) => s._tag === "Running" && s.progress !== undefined && s.progress > 0 && s.progress < 100)).toBe(true)
    if (status._tag !== "Succeeded") throw new Error(JSON.stringify(status))
    const [output] = status.outputs
    expect([output!.type, output!.contentType, output!.source._tag]).toEqual(["video", "video/mp4", "Url"])
    if (output!.source._tag !== "Url") throw new Error("expected a URL")
    expect(output!.source.headers).toBeUndefined()
    const video = await Effect.runPromise(bytesOf(output!.source))
    expect([video.contentType, video.bytes.length]).toEqual(["video/mp4", 200_000])
    expect(sim.counters.starts).toBe(1)
  })

  it("text_to_image for a model named for images, or for an endpoint named in the provider model", async () => {
    const bare = startedHandle(await start("gen4_image", { promptText: "a fox", ratio: "1024:1024" }))
    const named = startedHandle(await start("text_to_image/gemini_2.5_flash", { promptText: "a fox", ratio: "1024:1024" }))
    expect(sim.creates.slice(-2).map((create) => [create.endpoint, create.body["model"]])).toEqual([
      ["text_to_image", "gen4_image"],
      ["text_to_image", "gemini_2.5_flash"]
    ])
    for (const handle of [bare, named]) {
      // The handle keeps the endpoint: the output is an image whatever the request says now.
      const status = await settle(handle)
      if (status._tag !== "Succeeded") throw new Error(JSON.stringify(status))
      expect([status.outputs[0]!.type, (await Effect.runPromise(bytesOf(status.outputs[0]!.source))).contentType]).toEqual(["image", "image/png"])
    }
  })

  it("a THROTTLED task (over Runway's concurrency) is still running to the engine", async () => {
    const first = startedHandle(await start("veo3", { promptText: "first", duration: 8 }))
    const second = startedHandle(await start("veo3", { promptText: "second", duration: 8 }))
    expect(sim.creates.at(-1)!.endpoint).toBe("text_to_video")
    expect(await rawStatus(second)).toBe("THROTTLED")
    expect(await poll(second)).toEqual({ _tag: "Running" })
    await settle(first)
    expect((await settle(second))._tag).toBe("Succeeded")
  })

  it("a task that fails at Runway ends Failed with its failure and code", async () => {
    const handle = startedHandle(await start("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720", promptText: "[fail]" }))
    expect(await settle(handle)).toEqual({
      _tag: "Failed",
      message: "Runway could not generate: The prompt was flagged by content moderation. (SAFETY.INPUT.TEXT)",
      providerCode: "SAFETY.INPUT.TEXT"
    })
  })

  it("cancel deletes the task; the task is gone afterwards, and cancelling it again is fine", async () => {
    const handle = startedHandle(await start("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" }))
    await Effect.runPromise(provider.cancel(handle, requestFor("gen4_turbo", {})))
    expect(sim.counters.cancels).toBe(1)
    expect(await failureOf(provider.poll(handle, requestFor("gen4_turbo", {})))).toMatchObject({
      _tag: "ProviderRejected",
      retryable: false,
      httpStatus: 404
    })
    await Effect.runPromise(provider.cancel(handle, requestFor("gen4_turbo", {})))
  })
})

describe("Runway errors", () => {
  it("429 three times: three retryable rejections with Retry-After, then one task", async () => {
    sim.rateLimitNext(3, { retryAfterSeconds: 7 })
    for (let i = 0; i < 3; i++) {
      const error = await failureOf(provider.start(requestFor("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" })))
      expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: true, retryAfterMs: 7_000, httpStatus: 429 })
    }
    startedHandle(await start("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" }))
    expect([sim.counters.rateLimited, sim.counters.starts]).toEqual([3, 1])
  })

  it("Runway shedding load (502, 503, 504) is retryable", async () => {
    for (const status of [502, 503, 504]) {
      sim.errorNext(1, status, { message: "Runway is shedding load" })
      const error = await failureOf(provider.start(requestFor("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" })))
      expect(error).toMatchObject({ retryable: true, httpStatus: status, message: `Runway answered HTTP ${status}: Runway is shedding load` })
    }
  })

  it("an input Runway does not validate is permanent, with its issues", async () => {
    const error = await failureOf(provider.start(requestFor("image_to_video/gen4_turbo", { promptText: "no image" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 400 })
    expect(error.message).toBe("Runway answered HTTP 400: Validation of body failed (promptImage is required; ratio is required)")
  })

  it("an endpoint Runway does not have is refused before asking Runway", async () => {
    const before = sim.creates.length
    const error = await failureOf(provider.start(requestFor("image_to_sound/x", { promptText: "x" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false })
    expect(sim.creates.length).toBe(before)
  })

  it("the API version is sent with every request", async () => {
    const old = runwayProvider({ apiSecret: sim.apiSecret, baseUrl: sim.url, apiVersion: "2020-01-01" })
    const error = await failureOf(old.start(requestFor("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" })))
    expect(error.message).toBe("Runway answered HTTP 400: X-Runway-Version must be 2024-11-06, got 2020-01-01")
  })

  it("a wrong secret is a permanent 401 whose message does not repeat the secret", async () => {
    const secret = "key_wrong_0123456789abcdef"
    const wrong = runwayProvider({ apiSecret: secret, baseUrl: sim.url })
    const error = await failureOf(wrong.start(requestFor("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" })))
    expect(error).toMatchObject({ _tag: "ProviderRejected", retryable: false, httpStatus: 401 })
    expect(error.message).toBe("Runway answered HTTP 401: The provided API key is not valid: [redacted]")
    expect(JSON.stringify(error)).not.toContain(secret)
  })

  it("unreachable, late or malformed answers are ProviderUnreachable", async () => {
    const gone = await startRunwaySimulator()
    await gone.close()
    const unreachable = runwayProvider({ apiSecret: gone.apiSecret, baseUrl: gone.url })
    const error = await failureOf(unreachable.start(requestFor("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" })))
    expect(error._tag).toBe("ProviderUnreachable")
    expect(error.message).not.toContain(gone.apiSecret)
    expect((await failureOf(unreachable.cancel({ id: "t" }, requestFor("gen4_turbo", {}))))._tag).toBe("ProviderUnreachable")

    const handle = startedHandle(await start("gen4_turbo", { promptImage: IMAGE, ratio: "1280:720" }))
    sim.malformedNext(1)
    const malformed = await failureOf(provider.poll(handle, requestFor("gen4_turbo", {})))
    expect(malformed._tag).toBe("ProviderUnreachable")
    expect(malformed.message).toContain("Runway answered HTTP 200 with a body it does not document")

    sim.slowNext(1, 2_000)
    const impatient = runwayProvider({ apiSecret: sim.apiSecret, baseUrl: sim.url, requestTimeoutMs: 200 })
    expect(await failureOf(impatient.poll(handle, requestFor("gen4_turbo", {})))).toMatchObject({
      _tag: "ProviderUnreachable",
      message: "Runway did not answer within 200 ms"
    })
  })
})
