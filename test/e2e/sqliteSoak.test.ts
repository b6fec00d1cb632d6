import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { unlimitedDemoCatalogFile } from "../support/demoCatalog.js"
import { callServer as call, isRunning, type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"

const ADMIN = "soak-admin-token"
/**
 * Long enough for many collections. With the young generation this small, better-sqlite3 12 (the
 * driver before node:sqlite) aborted Node 24 before the server was first healthy.
 */
const SOAK_MS = Number(process.env.SOAK_MS ?? 20_000)
const CLIENTS = 8

/**
 * The embedded default kept busy on the running Node for a while: every kind of request, jobs
 * that complete, fail and are cancelled, with a young generation kept small so that garbage
 * collections (which finalize the SQLite driver's statements the store no longer caches) run
 * all along. better-sqlite3 12 aborted Node 24.19+ with SIGABRT in exactly that finalization
 * (`Assertion failed: (env) != nullptr`, `Statement::~Statement`); node:sqlite's statements are
 * finalized there too. The process must live through it and answer every request, and on Node 22
 * print no `ExperimentalWarning` for node:sqlite (the server drops that one warning).
 */
describe(`the bundled server on SQLite kept under load (Node ${process.versions.node})`, () => {
  let server: RunningServer
  beforeAll(async () => {
    const dataDir = tempDataDir()
    const catalogFile = unlimitedDemoCatalogFile(dataDir)
    server = await startServer(
      { DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, WORKER_CONCURRENCY: "8", CATALOG_FILE: catalogFile },
      ["--max-semi-space-size=1"]
    )
  })
  afterAll(async () => {
    await server?.stop("SIGKILL")
  })

  it("lives through the load, answers every request and ends every job", async () => {
    const created = await call(server, "POST", "/admin/accounts", ADMIN, { name: "soak", creditsMicroCents: 1_000_000_000_000, maxConcurrentJobs: 10_000 })
    const key = String((await call(server, "POST", `/admin/accounts/${created.body.id}/keys`, ADMIN, { name: "soak" })).body.key)
    const unexpected: Array<string> = []
    const expectStatus = (what: string, status: number, allowed: ReadonlyArray<number>) => {
      if (!allowed.includes(status)) unexpected.push(`${what} ${status}`)
    }
    const jobs: Array<string> = []
    const models = ["demo/text-gen/text-to-text", "demo/image-gen/text-to-image", "demo/audio-gen/text-to-audio"]
    const until = Date.now() + SOAK_MS
    let i = 0
    const client = async () => {
      while (Date.now() < until && isRunning(server.child)) {
        const n = i++
        const input = { prompt: `soak ${n}`, demoDelayMs: n % 50, ...(n % 11 === 0 ? { demoFail: true } : {}) }
        const submitted = await call(server, "POST", "/v1/jobs/submit", key, { model: models[n % models.length], input })
        expectStatus("submit", submitted.status, [200])
        if (submitted.status !== 200) continue
        const id = String(submitted.body.jobId)
        jobs.push(id)
        expectStatus("get", (await call(server, "GET", `/v1/jobs/${id}`, key)).status, [200])
        if (n % 4 === 0) expectStatus("cancel", (await call(server, "POST", `/v1/jobs/${id}/cancel`, key)).status, [200, 409])
        if (n % 5 === 0) expectStatus("list", (await call(server, "GET", `/v1/jobs?limit=${1 + (n % 50)}&status=completed`, key)).status, [200])
        if (n % 7 === 0) expectStatus("estimate", (await call(server, "POST", "/v1/jobs/estimate", key, { model: models[n % models.length] })).status, [200])
        if (n % 13 === 0) expectStatus("account", (await call(server, "GET", "/v1/account", key)).status, [200])
        if (n % 17 === 0) expectStatus("admin jobs", (await call(server, "GET", "/admin/jobs?limit=25", ADMIN)).status, [200])
      }
    }
    await Promise.all(Array.from({ length: CLIENTS }, client))

    expect(isRunning(server.child), server.output.slice(-4_000)).toBe(true)
    expect(unexpected).toEqual([])
    expect(server.output).not.toMatch(/ExperimentalWarning|SQLite is an experimental feature/)
    expect(jobs.length).toBeGreaterThan(100)
    const ended = await waitFor(async () => {
      const pending = await call(server, "GET", "/v1/jobs?status=pending&limit=1", key)
      const processing = await call(server, "GET", "/v1/jobs?status=processing&limit=1", key)
      return pending.body.jobs.length === 0 && processing.body.jobs.length === 0
    }, 60_000)
    expect(ended).toBe(true)
    expect(isRunning(server.child), server.output.slice(-4_000)).toBe(true)
  }, SOAK_MS + 120_000)
})
