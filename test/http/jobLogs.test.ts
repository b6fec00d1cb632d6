import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeDemoProvider } from "../../adapters/generators/demo/DemoGenerator.js"
import { createClient } from "../../src/client/createClient.js"
import { readEvents, type ServerEvent } from "../../src/client/eventStream.js"
import { encodeLogCursor } from "../../src/domain/logCursor.js"
import { LOG_CAP_MARKER, MAX_LOG_LINES } from "../../src/domain/providerLogs.js"
import type { GenerationProvider } from "../../src/ports/Provider.js"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"
import { waitFor } from "../support/waitFor.js"

const TEXT = "demo/text-gen/text-to-text"
const SECRET = "sk-live-abcdefghijklmnopqrstuvwxyz"

/** What the scripted provider reports while its generation runs; `done` lets the demo provider finish it. */
const script = { progress: undefined as number | undefined, logs: [] as Array<string>, done: false }

const demo = makeDemoProvider()
const scripted: GenerationProvider = {
  ...demo,
  logSecrets: [SECRET],
  poll: (handle, request) =>
    Effect.suspend(() =>
      script.done
        ? demo.poll(handle, request)
        : Effect.succeed({ _tag: "Running", pollAfterMs: 20, logs: [...script.logs], ...(script.progress === undefined ? {} : { progress: script.progress }) } as const))
}

describe("provider progress and logs", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine({ providerPollIntervalMs: 20 }, { providers: { demo: scripted } })
  })
  afterAll(() => engine.dispose())

  it("shows progress and redacted lines to the owner only, pages them, caps them, and streams them", async () => {
    const acc = await engine.account()
    const other = await engine.account()
    const { body: { jobId } } = await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })
    expect((await acc.get(`/v1/jobs/${jobId}`)).body.providerProgress).toBeNull()
    expect((await acc.get(`/v1/jobs/${jobId}/logs`)).body).toMatchObject({ lines: [], hasMore: false })

    const stream = await engine.handler(new Request(`${BASE}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${acc.key}` } }))
    const events: Array<ServerEvent> = []
    const streamed = (async () => {
      for await (const event of readEvents(stream.body!)) events.push(event)
    })()
    const worked = engine.work()

    script.progress = 30
    script.logs = ["step one", `calling with ${SECRET}`, "Authorization: Bearer abcdefghijk123"]
    expect(await waitFor(async () => (await acc.get(`/v1/jobs/${jobId}`)).body.providerProgress === 30)).toBe(true)
    expect(await waitFor(async () => (await acc.get(`/v1/jobs/${jobId}/logs`)).body.lines.length === 3)).toBe(true)
    const page = (await acc.get(`/v1/jobs/${jobId}/logs`)).body
    expect(page.lines.map((l: { line: string }) => l.line)).toEqual(["step one", "calling with [REDACTED]", "Authorization: Bearer [REDACTED]"])
    expect(page.lines.map((l: { seq: number }) => l.seq)).toEqual([1, 2, 3])
    expect(Number.isNaN(Date.parse(page.lines[0].at))).toBe(false)
    // Running: no more lines now, but a cursor to follow the log with.
    expect(page).toMatchObject({ hasMore: false, nextCursor: expect.any(String) })
    expect((await acc.get("/v1/jobs")).body.jobs.find((j: { jobId: string }) => j.jobId === jobId).providerProgress).toBe(30)

    // Another account's job is refused as GET refuses it.
    const refused = await other.get(`/v1/jobs/${jobId}/logs`)
    expect(refused.status).toBe((await other.get(`/v1/jobs/${jobId}`)).status)
    expect(refused.body.error.code).toBe((await other.get(`/v1/jobs/${jobId}`)).body.error.code)
    expect((await acc.get("/v1/jobs/job_missing/logs")).status).toBe(404)

    // Pages of one, following nextCursor.
    const first = (await acc.get(`/v1/jobs/${jobId}/logs?limit=1`)).body
    expect(first).toMatchObject({ hasMore: true, lines: [{ seq: 1 }] })
    const second = (await acc.get(`/v1/jobs/${jobId}/logs?limit=2&cursor=${first.nextCursor}`)).body
    expect(second.lines.map((l: { seq: number }) => l.seq)).toEqual([2, 3])
    expect((await acc.get(`/v1/jobs/${jobId}/logs?cursor=bogus`)).body.error).toMatchObject({ code: "VALIDATION_ERROR" })
    expect((await acc.get(`/v1/jobs/${jobId}/logs?limit=0`)).status).toBe(400)

    // The operator reads any account's job log with the admin token: the same pages, the same cursors.
    expect((await engine.admin("GET", `/admin/jobs/${jobId}/logs`)).body).toEqual((await acc.get(`/v1/jobs/${jobId}/logs`)).body)
    const adminFirst = await engine.admin("GET", `/admin/jobs/${jobId}/logs?limit=1`)
    expect(adminFirst).toMatchObject({ status: 200, body: { hasMore: true, lines: [{ seq: 1, line: "step one" }] } })
    expect((await engine.admin("GET", `/admin/jobs/${jobId}/logs?limit=2&cursor=${adminFirst.body.nextCursor}`)).body.lines
      .map((l: { line: string }) => l.line)).toEqual(["calling with [REDACTED]", "Authorization: Bearer [REDACTED]"])
    expect((await engine.admin("GET", `/admin/jobs/${jobId}`)).body).toMatchObject({ status: "processing", providerProgress: 30 })
    expect((await engine.admin("GET", `/admin/jobs/${jobId}/logs?cursor=bogus`)).body.error).toMatchObject({ code: "VALIDATION_ERROR" })
    expect((await engine.admin("GET", "/admin/jobs/job_missing/logs")).body.error).toMatchObject({ code: "JOB_NOT_FOUND" })
    // An account's API key is not the admin token.
    expect((await acc.get(`/admin/jobs/${jobId}/logs`)).status).toBe(401)

    // A lower progress is never shown; more lines than the cap end with its marker.
    script.progress = 10
    script.logs = [...script.logs, ...Array.from({ length: MAX_LOG_LINES + 100 }, (_, i) => `line ${i}`)]
    const nearCap = encodeLogCursor(MAX_LOG_LINES - 1)
    expect(await waitFor(async () => (await acc.get(`/v1/jobs/${jobId}/logs?cursor=${nearCap}`)).body.lines.length === 1)).toBe(true)
    let cursor: string | undefined = second.nextCursor
    const lines: Array<{ seq: number; line: string }> = []
    for (let i = 0; i < 20 && cursor !== undefined; i++) {
      const next = (await acc.get(`/v1/jobs/${jobId}/logs?limit=100&cursor=${cursor}`)).body
      lines.push(...next.lines)
      cursor = next.hasMore ? next.nextCursor : undefined
    }
    expect(lines.at(-1)).toMatchObject({ seq: MAX_LOG_LINES, line: LOG_CAP_MARKER })
    expect((await acc.get(`/v1/jobs/${jobId}`)).body.providerProgress).toBe(30)

    script.progress = 80
    expect(await waitFor(async () => (await acc.get(`/v1/jobs/${jobId}`)).body.providerProgress === 80)).toBe(true)
    script.done = true
    expect(await worked).toBe(true)
    await streamed

    // The stream: statuses with ids, progress rises as job events without one, each new line as a `log` event.
    const statuses = events.filter((e) => e.event === "message")
    expect([...new Set(statuses.map((e) => JSON.parse(e.data).status))]).toEqual(["pending", "processing", "completed"])
    expect(statuses.some((e) => JSON.parse(e.data).providerProgress === 80)).toBe(true)
    const logLines = events.filter((e) => e.event === "log").map((e) => JSON.parse(e.data))
    expect(logLines.slice(0, 3).map((l) => l.line)).toEqual(["step one", "calling with [REDACTED]", "Authorization: Bearer [REDACTED]"])
    expect(logLines.map((l) => l.seq)).toEqual(Array.from({ length: MAX_LOG_LINES }, (_, i) => i + 1))
    const done = (await acc.get(`/v1/jobs/${jobId}`)).body
    expect(done).toMatchObject({ status: "completed", progress: 100, providerProgress: 80 })
    // The client reads the same pages, and its Effect twin types them from the HttpApi.
    const client = createClient({ baseUrl: BASE, apiKey: acc.key, fetch: (url, init) => engine.handler(new Request(url, init)) })
    const byClient = await client.logs(jobId, { limit: 2 })
    expect(byClient).toMatchObject({ hasMore: true, lines: [{ seq: 1, line: "step one" }, { seq: 2, line: "calling with [REDACTED]" }] })
    expect((await client.logs(jobId, { limit: 1, cursor: byClient.nextCursor! })).lines).toMatchObject([{ seq: 3 }])
    expect((await client.get(jobId)).providerProgress).toBe(80)
    await expect(createClient({ baseUrl: BASE, apiKey: other.key, fetch: (url, init) => engine.handler(new Request(url, init)) }).logs(jobId))
      .rejects.toMatchObject({ status: refused.status })

    // Ended: the last page says no line follows.
    expect((await acc.get(`/v1/jobs/${jobId}/logs?cursor=${encodeLogCursor(MAX_LOG_LINES)}`)).body).toEqual({ lines: [], hasMore: false, nextCursor: null })
    expect((await engine.admin("GET", `/admin/jobs/${jobId}/logs?cursor=${encodeLogCursor(MAX_LOG_LINES)}`)).body)
      .toEqual({ lines: [], hasMore: false, nextCursor: null })
  })
})
