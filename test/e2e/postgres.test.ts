import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readEvents } from "../../src/client/eventStream.js"
import { freshPostgresUrl } from "../support/postgres.js"
import { type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"

const databaseUrl = await freshPostgresUrl()
const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/

describe.skipIf(databaseUrl === undefined)("scale-out on PostgreSQL: an API process and a worker process", () => {
  const servers: Array<RunningServer> = []
  let api: RunningServer
  let key: string
  beforeAll(async () => {
    const dataDir = tempDataDir()
    // The demo account is this test's: a PostgreSQL store is seeded only when asked (SEED_DEMO).
    api = await startServer({ DATABASE_URL: databaseUrl!, DATA_DIR: dataDir, WORKER_CONCURRENCY: "0", SEED_DEMO: "true" })
    servers.push(api)
    key = KEY_PATTERN.exec(api.output)![0]
    servers.push(await startServer({ DATABASE_URL: databaseUrl!, DATA_DIR: dataDir, WORKER_CONCURRENCY: "2" }))
  })
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop("SIGKILL")))
  })

  it("runs jobs submitted to the API process on the worker process", async () => {
    expect(KEY_PATTERN.test(servers[1]!.output)).toBe(false)
    const submit = (prompt: string) =>
      fetch(`${api.url}/v1/jobs/submit`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "demo/audio-gen/text-to-audio", input: { prompt, duration: 0.2 } })
      }).then((r) => r.json())
    const jobs = await Promise.all(["a", "b", "c"].map(submit))
    for (const { jobId } of jobs) {
      const deadline = Date.now() + 20_000
      let job: any
      do {
        job = await (await fetch(`${api.url}/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${key}` } })).json()
        if (job.status === "completed") break
        await new Promise((r) => setTimeout(r, 100))
      } while (Date.now() < deadline)
      expect(job).toMatchObject({ status: "completed", outputs: [{ type: "audio", contentType: "audio/wav" }] })
      const file = await fetch(job.output)
      expect(file.headers.get("content-type")).toBe("audio/wav")
    }
  })

  it("streams from the API process each status the worker process sets, hinted through NOTIFY", async () => {
    const started = Date.now()
    const { jobId } = await fetch(`${api.url}/v1/jobs/submit`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "demo/text-gen/text-to-text", input: { prompt: "x", demoDelayMs: 1_500 } })
    }).then((r) => r.json())
    const stream = await fetch(`${api.url}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}` } })
    expect(stream.headers.get("content-type")).toContain("text/event-stream")
    const seen: Array<string> = []
    // Status events only: a pending job's place comes as `queue` events beside them.
    for await (const event of readEvents(stream.body!)) if (event.event === "message") seen.push(`${event.id} ${JSON.parse(event.data).status}`)
    // The worker process may have claimed the job before the stream opened.
    expect(seen.filter((e) => e !== "1 pending")).toEqual(["2 processing", "3 completed"])
    // The backstop re-read comes every 5 s: sooner means the worker process's NOTIFY arrived.
    expect(Date.now() - started).toBeLessThan(4_500)
  })
})

describe.skipIf(databaseUrl === undefined)("DATABASE_POOL_SIZE", () => {
  it("bounds the connections one process opens, whatever its workers and requests ask for", async () => {
    const url = (await freshPostgresUrl())!
    const admin = "e2e-admin-token"
    const server = await startServer({
      DATABASE_URL: url,
      DATA_DIR: tempDataDir(),
      WORKER_CONCURRENCY: "8",
      DATABASE_POOL_SIZE: "2",
      ADMIN_TOKEN: admin,
      // For the demo catalog, which a PostgreSQL store gets only when asked.
      SEED_DEMO: "true"
    })
    const observer = new pg.Client({ connectionString: url })
    await observer.connect()
    try {
      const asAdmin = (path: string, body: unknown) =>
        fetch(`${server.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then((r) => r.json() as any)
      const account = await asAdmin("/admin/accounts", { name: "pool", creditsMicroCents: 1_000_000_000, maxConcurrentJobs: 100 })
      const key = String((await asAdmin(`/admin/accounts/${account.id}/keys`, { name: "pool" })).key)
      let most = 0
      let sampling = true
      const sampler = (async () => {
        while (sampling) {
          const { rows } = await observer.query<{ n: string }>(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'genjobs'"
          )
          most = Math.max(most, Number(rows[0]!.n))
          await new Promise((r) => setTimeout(r, 5))
        }
      })()
      const call = (path: string, body?: unknown) =>
        fetch(`${server.url}${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        }).then(async (r) => ({ status: r.status, body: await r.json() as any }))
      const submitted = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        call("/v1/jobs/submit", { model: "demo/text-gen/text-to-text", input: { prompt: `p${i}`, demoDelayMs: 50 } })))
      expect(submitted.map((s) => s.status)).toEqual(submitted.map(() => 200))
      const deadline = Date.now() + 20_000
      const ended = new Set<string>()
      while (ended.size < submitted.length && Date.now() < deadline) {
        for (const { body } of submitted) {
          if (!ended.has(body.jobId) && (await call(`/v1/jobs/${body.jobId}`)).body.status === "completed") ended.add(body.jobId)
        }
      }
      sampling = false
      await sampler
      expect(ended.size).toBe(submitted.length)
      expect(most).toBeGreaterThan(0)
      expect(most).toBeLessThanOrEqual(2)
    } finally {
      await observer.end()
      await server.stop("SIGKILL")
    }
  }, 60_000)
})
