import { Readable } from "node:stream"
import { createClient, type FetchLike, GenjobsError, type Job, JobFailedError } from "genjobs/client"
import { expect, it } from "vitest"

/** A running engine: where it answers, how to reach it, and its operator token. */
export interface Target {
  readonly baseUrl: string
  readonly fetch: FetchLike
  readonly adminToken: string
  /** Whether the demo provider can read uploaded files over HTTP (a real server only). */
  readonly readsUploads: boolean
}

const IMAGE = "demo/image-gen/text-to-image"
const TEXT = "demo/text-gen/text-to-text"

const admin = async (target: Target, path: string, body: unknown) => {
  const response = await target.fetch(`${target.baseUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${target.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  expect(response.status).toBe(201)
  return response.json() as Promise<any>
}

/** A fresh account and key, so counts and balances in one test are that test's own. */
export const newKey = async (target: Target, creditsMicroCents = 10_000_000) => {
  const account = await admin(target, "/admin/accounts", { name: "client", creditsMicroCents })
  return (await admin(target, `/admin/accounts/${account.id}/keys`, { name: "k" })).key as string
}

const clientFor = async (target: Target, options: { readonly creditsMicroCents?: number; readonly fetch?: FetchLike } = {}) =>
  createClient({ baseUrl: target.baseUrl, apiKey: await newKey(target, options.creditsMicroCents), fetch: options.fetch ?? target.fetch })

const bytesAt = async (target: Target, url: string) => new Uint8Array(await (await target.fetch(url, { method: "GET" })).arrayBuffer())

/** The client's behaviour against one engine; each file runs it against its own. */
export const clientSuite = (target: () => Target) => {
  it("run() resolves with the completed job", async () => {
    const client = await clientFor(target())
    const job = await client.run(IMAGE, { prompt: "a fox", width: 16, height: 16 })
    expect(job).toMatchObject({ status: "completed", progress: 100 })
    expect(job.outputs?.[0]?.type).toBe("image")
  })

  it("run() of a failing job rejects with JobFailedError carrying the job and its error", async () => {
    const client = await clientFor(target())
    const error = await client.run(TEXT, { prompt: "x", demoFail: true }).catch((e) => e)
    expect(error).toBeInstanceOf(JobFailedError)
    expect([error._tag, error.code]).toEqual(["JobFailedError", "GENERATION_FAILED"])
    expect(error.job).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED" } })
  })

  it("subscribe() reports pending, processing and completed", async () => {
    const client = await clientFor(target())
    // Keep the one worker busy so the subscribed job is seen waiting first; it then processes
    // longer than the longest pause between polls (2 s), so that status is seen too.
    const blocker = await client.submit(TEXT, { prompt: "busy", demoDelayMs: 800 })
    const seen: Array<Job["status"]> = []
    const job = await client.subscribe(TEXT, { prompt: "watched", demoDelayMs: 2_500 }, { onUpdate: (j) => seen.push(j.status) })
    expect(job.status).toBe("completed")
    expect(seen).toEqual(["pending", "processing", "completed"])
    expect((await client.wait(blocker.jobId)).status).toBe("completed")
  })

  it("uploads bytes, a Blob and a Node stream, each readable at its fileUrl", async () => {
    const client = await clientFor(target())
    const bytes = new Uint8Array([137, 80, 78, 71, 1, 2, 3])
    const fromBytes = await client.upload(bytes, { filename: "a.png", contentType: "image/png" })
    const fromBlob = await client.upload(new Blob([bytes.slice(0, 5)], { type: "image/png" }), { filename: "b.png" })
    const fromStream = await client.upload(Readable.from([Buffer.from([9, 8]), Buffer.from([7])]), {
      filename: "c.png",
      contentType: "image/png",
      size: 3
    })
    expect([...await bytesAt(target(), fromBytes.fileUrl)]).toEqual([...bytes])
    expect([...await bytesAt(target(), fromBlob.fileUrl)]).toEqual([...bytes.slice(0, 5)])
    expect([...await bytesAt(target(), fromStream.fileUrl)]).toEqual([9, 8, 7])
    await expect(client.upload(Readable.from([Buffer.from([1])]), { filename: "d.png", contentType: "image/png" }))
      .rejects.toThrow(/size/)
    if (target().readsUploads) {
      const remix = await client.run("demo/image-gen/image-to-image", { prompt: "remix", imageUrl: fromBlob.fileUrl, width: 16, height: 16 })
      expect(remix.status).toBe("completed")
    }
  })

  it("list() gives one page; jobs() iterates every page, newest first", async () => {
    const client = await clientFor(target())
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) ids.push((await client.submit(TEXT, { prompt: `p${i}` })).jobId)
    const page = await client.list({ limit: 2 })
    expect(page.jobs).toHaveLength(2)
    expect(page.hasMore).toBe(true)
    const all: Array<string> = []
    for await (const job of client.jobs({ limit: 2 })) all.push(job.jobId)
    expect(all).toEqual([...ids].reverse())
  })

  it("refusals are GenjobsError with the envelope's code, status and requestId", async () => {
    const client = await clientFor(target())
    const missing = await client.get("job_nope").catch((e) => e)
    expect(missing).toBeInstanceOf(GenjobsError)
    expect(missing).toMatchObject({ _tag: "GenjobsError", code: "JOB_NOT_FOUND", status: 404 })
    expect(missing.requestId).toMatch(/^req_/)
    const anonymous = createClient({ baseUrl: target().baseUrl, apiKey: "gjk_wrong", fetch: target().fetch })
    expect(await anonymous.account().catch((e) => e)).toMatchObject({ status: 401 })
    const poor = await clientFor(target(), { creditsMicroCents: 0 })
    expect(await poor.run(IMAGE, { prompt: "x" }).catch((e) => e)).toMatchObject({ code: "INSUFFICIENT_BALANCE", status: 402 })
  })

  it("retries a submit whose answer was a 503, with the same Idempotency-Key, and charges once", async () => {
    const keys: Array<string | null> = []
    let failed = false
    // The first submit reaches the engine (and is charged), but its answer is lost to a 503.
    const flaky: FetchLike = async (url, init) => {
      const response = await target().fetch(url, init)
      if (!url.endsWith("/v1/jobs/submit")) return response
      keys.push(new Headers(init.headers).get("idempotency-key"))
      if (failed) return response
      failed = true
      return new Response(JSON.stringify({ success: false, error: { code: "SERVICE_UNAVAILABLE", message: "try again", details: {} }, requestId: "req_x" }), {
        status: 503,
        headers: { "content-type": "application/json", "retry-after": "0" }
      })
    }
    const client = await clientFor(target(), { fetch: flaky })
    const before = (await client.account()).account.balanceMicroCents
    const submitted = await client.submit(TEXT, { prompt: "once" })
    expect(keys).toHaveLength(2)
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/)
    expect(keys[1]).toBe(keys[0])
    const after = (await client.account()).account
    expect(before - after.balanceMicroCents).toBe(submitted.costMicroCents)
    expect((await client.list()).jobs.map((j) => j.jobId)).toEqual([submitted.jobId])
  })

  it("model(slug) reaches a slug with slashes; models() and account() answer", async () => {
    const client = await clientFor(target())
    const model = await client.model(IMAGE)
    expect(model.id).toBe(IMAGE)
    expect(model.versions.length).toBeGreaterThan(0)
    expect((await client.models()).models.map((m) => m.id)).toContain(IMAGE)
    const overview = await client.account()
    expect(overview.account.balanceMicroCents).toBe(10_000_000)
    expect(overview.key.name).toBe("k")
  })

  it("changes() follows the account's endings from a stored cursor, each once, oldest first", async () => {
    const client = await clientFor(target())
    const done = await client.run(TEXT, { prompt: "x" })
    const failed = ((await client.run(TEXT, { prompt: "x", demoFail: true }).catch((e: unknown) => e)) as JobFailedError).job
    const all: Array<{ jobId: string; status: string; cursor: string }> = []
    for await (const change of client.changes({ pageSize: 1 })) all.push(change)
    expect(all.map((c) => [c.jobId, c.status])).toEqual([[done.jobId, "completed"], [failed.jobId, "failed"]])
    // A receiver that handled the first entry resumes after its cursor.
    const rest: Array<string> = []
    for await (const change of client.changes({ after: all[0]!.cursor })) rest.push(change.jobId)
    expect(rest).toEqual([failed.jobId])
    const page = await client.changesPage({ after: all[1]!.cursor })
    expect(page).toEqual({ changes: [], nextCursor: expect.any(String), hasMore: false })
    const later = await client.run(TEXT, { prompt: "y" })
    const next = await client.changesPage({ after: page.nextCursor })
    expect(next.changes.map((c) => c.jobId)).toEqual([later.jobId])
  })
}
