import { afterAll, beforeAll, describe, expect, it } from "vitest"
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
    api = await startServer({ DATABASE_URL: databaseUrl!, DATA_DIR: dataDir, WORKER_CONCURRENCY: "0" })
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
})
