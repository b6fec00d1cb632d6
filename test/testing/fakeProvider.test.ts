import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { type AsyncTestAccount, type AsyncTestEngine, imageOutput, makeTestEngine, textOutput, TINY_PNG } from "genjobs/testing"

let engine: AsyncTestEngine
let alice: AsyncTestAccount
beforeEach(async () => {
  engine = await makeTestEngine()
  alice = await engine.account({ credits: 100 })
})
afterEach(() => engine.dispose())

const download = async (url: string) => new Uint8Array(await (await engine.fetch(new Request(url))).arrayBuffer())

describe("the fake provider", () => {
  it("completes a job with the outputs it was given, stored and served", async () => {
    const picture = new Uint8Array([1, 2, 3, 4])
    engine.provider.succeedNext(imageOutput(picture, { metadata: { seed: 7 } }), textOutput("caption"))
    const { jobId } = await alice.submit("test/image", { prompt: "a fox" })
    expect(await engine.runJobs()).toBe(1)
    const job = await alice.get(jobId)
    expect(job).toMatchObject({ status: "completed", error: null })
    expect(job.outputs).toMatchObject([
      { type: "image", contentType: "image/png", metadata: { seed: 7 } },
      { type: "text", contentType: "text/plain; charset=utf-8" }
    ])
    expect(job.output).toBe(job.outputs![0]!.url)
    expect(job.output!.startsWith(`${engine.origin}/files/`)).toBe(true)
    expect(await download(job.outputs![0]!.url)).toEqual(picture)
    expect(new TextDecoder().decode(await download(job.outputs![1]!.url))).toBe("caption")
    expect(engine.provider.calls.map((c) => [c.job.id, c.model.slug, c.version.versionId, c.job.input])).toEqual([
      [jobId, "test/image", "v1", { prompt: "a fox" }]
    ])
  })

  it("makes a small valid file of the model's kind by default", async () => {
    const image = await alice.submit("test/image")
    const text = await alice.submit("test/text")
    const video = await alice.submit("test/video")
    expect(await engine.runJobs()).toBe(3)
    const [imageJob, textJob, videoJob] = await Promise.all([image, text, video].map((j) => alice.get(j.jobId)))
    expect(await download(imageJob!.output!)).toEqual(TINY_PNG)
    expect(new TextDecoder().decode(await download(textJob!.output!))).toBe("test output")
    expect(videoJob!.outputs![0]).toMatchObject({ type: "video", contentType: "image/apng" })
    expect(videoJob!.outputs![0]!.thumbnail).toBeDefined()
  })

  it("fails a job with the scripted message and refunds it", async () => {
    engine.provider.failNext("the model is overloaded")
    const { costMicroCents, jobId } = await alice.submit("test/image")
    expect(costMicroCents).toBe(2 * 10_000)
    expect(await alice.balance()).toBe(98)
    await engine.runJobs()
    expect(await alice.get(jobId)).toMatchObject({
      status: "failed",
      error: { code: "GENERATION_FAILED", message: "the model is overloaded" }
    })
    expect(await alice.balance()).toBe(100)
  })

  it("fails a job with the facts the provider reports, from which the engine decides its failure type", async () => {
    engine.provider.failNext("flagged by the safety system", { providerCode: "content_policy_violation" })
    const blocked = await alice.submit("test/image")
    engine.provider.failNext("no reason given")
    const unexplained = await alice.submit("test/image")
    await engine.runJobs()
    expect((await alice.get(blocked.jobId))!.error).toEqual({
      code: "GENERATION_FAILED",
      message: "flagged by the safety system",
      type: "content_blocked",
      retryable: false
    })
    expect((await alice.get(unexplained.jobId))!.error).toMatchObject({ type: "provider_unavailable", retryable: true })
  })

  it("holds a job in processing until the hang is released, then completes it", async () => {
    const hang = engine.provider.hangNext()
    const { jobId } = await alice.submit("test/text")
    const running = engine.runNextJob()
    expect((await hang.reached).job.id).toBe(jobId)
    expect(await alice.get(jobId)).toMatchObject({ status: "processing", progress: 50 })
    expect(await engine.runNextJob()).toBe(false)
    hang.release(textOutput("finally"))
    expect(await running).toBe(true)
    const job = await alice.get(jobId)
    expect(job.status).toBe("completed")
    expect(new TextDecoder().decode(await download(job.output!))).toBe("finally")
  })

  it("fails a held job when the hang fails", async () => {
    const hang = engine.provider.hangNext()
    const { jobId } = await alice.submit("test/text")
    const running = engine.runNextJob()
    await hang.reached
    hang.fail("cut off")
    await running
    expect(await alice.get(jobId)).toMatchObject({ status: "failed", error: { message: "cut off" } })
  })

  it("plays queued behaviours in order, then rules by model or input, then the default", async () => {
    engine.provider.when({ input: { prompt: "boom" } }).fail("no booms")
    engine.provider.when({ model: "test/audio" }).fail("no audio")
    engine.provider.when((request) => request.job.input["n"] === 3).succeed(textOutput("three"))
    engine.provider.succeedNext()
    const first = await alice.submit("test/text", { prompt: "boom" })
    const boom = await alice.submit("test/text", { prompt: "boom" })
    const audio = await alice.submit("test/audio")
    const three = await alice.submit("test/text", { n: 3 })
    const plain = await alice.submit("test/text", { prompt: "calm" })
    expect(await engine.runJobs()).toBe(5)
    const status = async (id: string) => {
      const job = await alice.get(id)
      return job.error?.message ?? job.status
    }
    expect(await Promise.all([first, boom, audio, three, plain].map((j) => status(j.jobId)))).toEqual([
      "completed",
      "no booms",
      "no audio",
      "completed",
      "completed"
    ])
    engine.provider.reset()
    expect(engine.provider.calls).toEqual([])
  })

  it("scripts provider errors: a 429 is retried, a 400 fails the job, a lost start answer is recovered", async () => {
    const quick = await makeTestEngine({ settings: { providerRetry: { baseMs: 5, capMs: 20, maxRetries: 3 } } })
    try {
      const bob = await quick.account({ credits: 100 })
      quick.provider.rejectNext(429, 10)
      quick.provider.rejectNext(503)
      const retried = await bob.submit("test/text")
      await quick.runJobs()
      expect(await bob.get(retried.jobId)).toMatchObject({ status: "completed", error: null })
      expect([quick.provider.calls.length, quick.provider.starts]).toEqual([3, 1])

      quick.provider.reset()
      quick.provider.rejectNext(400)
      const refused = await bob.submit("test/text")
      await quick.runJobs()
      expect(await bob.get(refused.jobId)).toMatchObject({
        status: "failed",
        error: { code: "GENERATION_FAILED", message: "the fake provider answered 400" }
      })

      quick.provider.unreachableNext({ started: true })
      const lost = await bob.submit("test/text")
      await quick.runJobs()
      expect(await bob.get(lost.jobId)).toMatchObject({ status: "completed" })
      quick.provider.unreachableNext()
      const unknown = await bob.submit("test/text")
      await quick.runJobs()
      expect(await bob.get(unknown.jobId)).toMatchObject({ status: "failed", error: { code: "INTERNAL_ERROR" } })
      expect(quick.provider.starts).toBe(1)
      expect(await bob.balance()).toBe(100 - 1 - 1)
    } finally {
      await quick.dispose()
    }
  })
})
