import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readEvents, type ServerEvent } from "../../src/client/eventStream.js"
import { BASE, type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"

const TEXT = "demo/text-gen/text-to-text"

describe("the changes feed over HTTP", () => {
  let engine: HttpEngine
  beforeAll(async () => {
    engine = await makeHttpEngine()
  })
  afterAll(() => engine.dispose())

  type Account = Awaited<ReturnType<HttpEngine["account"]>>

  const submit = async (acc: Account) => (await acc.post("/v1/jobs/submit", { model: TEXT, input: { prompt: "x" } })).body.jobId as string

  /** Every page from `after` on, as a client follows the feed; the last page's nextCursor beside them. */
  const readUp = async (acc: Account, limit: number, after?: string) => {
    const changes: Array<Record<string, any>> = []
    let cursor = after
    for (;;) {
      const query = new URLSearchParams({ limit: String(limit), ...(cursor === undefined ? {} : { after: cursor }) })
      const page = await acc.get(`/v1/changes?${query}`)
      expect(page.status).toBe(200)
      expect(typeof page.body.nextCursor).toBe("string")
      changes.push(...page.body.changes)
      cursor = page.body.nextCursor
      if (!page.body.hasMore) return { changes, cursor: cursor! }
    }
  }

  it("pages an account's endings in the order they ended, with what a receiver needs; a cursor at the end sees only newer ones", async () => {
    const acc = await engine.account()
    const other = await engine.account()
    const cancelled = await submit(acc)
    await acc.post(`/v1/jobs/${cancelled}/cancel`)
    const completed = await submit(acc)
    expect(await engine.work()).toBe(true)
    const pending = await submit(acc) // still pending: no entry
    const theirs = await submit(other)
    await other.post(`/v1/jobs/${theirs}/cancel`)

    const { changes, cursor } = await readUp(acc, 1)
    expect(changes.map((c) => [c.jobId, c.status])).toEqual([[cancelled, "cancelled"], [completed, "completed"]])
    const job = (await acc.get(`/v1/jobs/${completed}`)).body
    expect(changes[1]).toEqual({
      cursor: expect.any(String),
      jobId: completed,
      requestId: expect.stringMatching(/^req_/),
      status: "completed",
      model: TEXT,
      version: expect.any(String),
      completedAt: job.completedAt,
      costMicroCents: expect.any(Number),
      refundedMicroCents: 0
    })
    expect(changes[0]!.refundedMicroCents).toBe(changes[0]!.costMicroCents)
    expect(changes[0]!.costMicroCents).toBeGreaterThan(0)

    // Read up: nothing more until another ending, then that one alone.
    expect((await readUp(acc, 10, cursor)).changes).toEqual([])
    const later = await submit(acc)
    await acc.post(`/v1/jobs/${later}/cancel`)
    expect((await readUp(acc, 10, cursor)).changes.map((c) => c.jobId)).toEqual([later])
    // An entry's own cursor resumes after it.
    expect((await readUp(acc, 10, changes[0]!.cursor)).changes.map((c) => c.jobId)).toEqual([completed, later])
    // The other account sees its own ending only.
    expect((await readUp(other, 10)).changes.map((c) => c.jobId)).toEqual([theirs])
    // Ended, so the next test's worker runs its own job.
    await acc.post(`/v1/jobs/${pending}/cancel`)
  })

  it("refuses a cursor it did not issue, a bad limit, and a key without check_status", async () => {
    const acc = await engine.account()
    for (const query of ["after=nope", "after=WzEsIngiXQ", "limit=0", "limit=1001", "limit=x"]) {
      const answer = await acc.get(`/v1/changes?${query}`)
      expect(answer.status).toBe(400)
      expect(answer.body.error.code).toBe("VALIDATION_ERROR")
    }
    const submitOnly = await engine.account({ scopes: ["submit_job"] })
    for (const path of ["/v1/changes", "/v1/changes/stream"]) {
      const answer = await submitOnly.get(path)
      expect(answer.status).toBe(403)
      expect(answer.body.error.code).toBe("OPERATION_NOT_ALLOWED")
    }
    expect((await acc.get("/v1/changes/stream", { "last-event-id": "nope" })).status).toBe(400)
  })

  it("streams every ending of the account on one connection, and resumes after Last-Event-ID with what it missed", async () => {
    const acc = await engine.account()
    const open = (headers: Record<string, string> = {}) =>
      engine.handler(new Request(`${BASE}/v1/changes/stream`, { headers: { authorization: `Bearer ${acc.key}`, ...headers } }))

    const first = await open()
    expect(first.status).toBe(200)
    expect(first.headers.get("content-type")).toContain("text/event-stream")
    const events = readEvents(first.body!)
    // Endings of two jobs, after the stream opened.
    const a = await submit(acc)
    const b = await submit(acc)
    await acc.post(`/v1/jobs/${a}/cancel`)
    expect(await engine.work()).toBe(true)
    const seen: Array<ServerEvent> = []
    for await (const event of events) {
      seen.push(event)
      if (seen.length === 2) break
    }
    expect(seen.map((e) => [JSON.parse(e.data).jobId, JSON.parse(e.data).status])).toEqual([[a, "cancelled"], [b, "completed"]])
    const page = (await readUp(acc, 10)).changes
    // Each event is the page's entry, its id the entry's cursor.
    expect(seen.map((e) => JSON.parse(e.data))).toEqual(page)
    expect(seen.map((e) => e.id)).toEqual(page.map((c) => c.cursor))

    // Gone for a while: one more ending happens; resumed after the first event, the stream gives both missed.
    const c = await submit(acc)
    await acc.post(`/v1/jobs/${c}/cancel`)
    const resumed = readEvents((await open({ "last-event-id": seen[0]!.id! })).body!)
    const again: Array<string> = []
    for await (const event of resumed) {
      again.push(JSON.parse(event.data).jobId)
      if (again.length === 2) break
    }
    expect(again).toEqual([b, c])
    // The same with `after` in the query, for a client that cannot send the header.
    const byQuery = readEvents(
      (await engine.handler(new Request(`${BASE}/v1/changes/stream?after=${encodeURIComponent(seen[1]!.id!)}`, {
        headers: { authorization: `Bearer ${acc.key}` }
      }))).body!
    )
    for await (const event of byQuery) {
      expect(JSON.parse(event.data).jobId).toBe(c)
      break
    }
  })

  it("is in the OpenAPI document, with its parameters and fields described", async () => {
    const document = (await engine.request("GET", "/v1/openapi.json")).body
    const list = document.paths["/v1/changes"].get
    const stream = document.paths["/v1/changes/stream"].get
    expect(list.summary).toBe("Read the changes feed")
    expect(stream.summary).toBe("Follow the changes feed")
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["after", "limit"])
    expect(stream.parameters.map((p: { name: string }) => p.name).sort()).toEqual(["after", "last-event-id"])
    expect(Object.keys(stream.responses["200"].content)).toEqual(["text/event-stream"])
    const page = JSON.stringify(list.responses["200"].content["application/json"].schema)
    const schemas = JSON.stringify(document.components.schemas)
    for (const field of ["nextCursor", "hasMore", "refundedMicroCents", "costMicroCents", "cursor"]) {
      expect(page.includes(field) || schemas.includes(field)).toBe(true)
    }
    expect(page + schemas).toContain("What the ending refunded")
  })
})
