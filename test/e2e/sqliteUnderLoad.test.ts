import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { unlimitedDemoCatalogFile } from "../support/demoCatalog.js"
import { callServer as call, type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"

const ADMIN = "e2e-admin-token"
const ACCOUNTS = 4
const SUBMITS = 320
const CONCURRENCY = 32
const CREDITS = 1_000_000_000
const TOP_UP = 1_000

/**
 * The embedded default (one SQLite file, its one writer shared by the API, four workers, the
 * reaper and the sweepers) under concurrent submits, reads, lists, cancels and credits: every
 * answer is the API's own (200, or 409 for a cancel that came too late), never a 5xx such as a
 * SQLITE_BUSY would make, every job ends, and every balance is exact.
 */
describe("the bundled server on SQLite under concurrent writers", () => {
  let server: RunningServer
  beforeAll(async () => {
    const dataDir = tempDataDir()
    const catalogFile = unlimitedDemoCatalogFile(dataDir)
    server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, WORKER_CONCURRENCY: "4", CATALOG_FILE: catalogFile })
  })
  afterAll(async () => {
    await server?.stop("SIGKILL")
  })

  it("answers every request, ends every job and keeps every balance exact", async () => {
    const accounts = await Promise.all(Array.from({ length: ACCOUNTS }, async (_, i) => {
      const created = await call(server, "POST", "/admin/accounts", ADMIN, { name: `load-${i}`, creditsMicroCents: CREDITS, maxConcurrentJobs: 1_000 })
      const key = await call(server, "POST", `/admin/accounts/${created.body.id}/keys`, ADMIN, { name: "load" })
      return { id: String(created.body.id), key: String(key.body.key), credited: CREDITS, jobs: [] as Array<{ id: string; cost: number }> }
    }))
    const answers = new Map<string, number>()
    const tally = (what: string, status: number) => answers.set(`${what} ${status}`, (answers.get(`${what} ${status}`) ?? 0) + 1)

    let next = 0
    const worker = async () => {
      while (next < SUBMITS) {
        const i = next++
        const account = accounts[i % ACCOUNTS]!
        const submitted = await call(server, "POST", "/v1/jobs/submit", account.key, {
          model: "demo/text-gen/text-to-text",
          input: { prompt: `load ${i}`, demoDelayMs: (i % 3) * 20 }
        })
        tally("submit", submitted.status)
        if (submitted.status !== 200) continue
        account.jobs.push({ id: submitted.body.jobId, cost: submitted.body.costMicroCents })
        tally("get", (await call(server, "GET", `/v1/jobs/${submitted.body.jobId}`, account.key)).status)
        if (i % 5 === 0) tally("cancel", (await call(server, "POST", `/v1/jobs/${submitted.body.jobId}/cancel`, account.key)).status)
        if (i % 8 === 0) tally("list", (await call(server, "GET", "/v1/jobs?limit=20", account.key)).status)
        if (i % 40 === 0) {
          const credit = await call(server, "POST", `/admin/accounts/${account.id}/credits`, ADMIN, { amountMicroCents: TOP_UP })
          tally("credit", credit.status)
          if (credit.status === 200) account.credited += TOP_UP
        }
      }
    }
    await Promise.all(Array.from({ length: CONCURRENCY }, worker))

    const refused = [...answers].filter(([what]) => !/ 200$/.test(what) && what !== "cancel 409")
    expect(refused).toEqual([])
    expect(answers.get("submit 200")).toBe(SUBMITS)
    expect(answers.get("cancel 200") ?? 0).toBeGreaterThan(0)

    for (const account of accounts) {
      const ended = new Map<string, string>()
      const deadline = Date.now() + 30_000
      while (ended.size < account.jobs.length && Date.now() < deadline) {
        for (const job of account.jobs) {
          if (ended.has(job.id)) continue
          const { body } = await call(server, "GET", `/v1/jobs/${job.id}`, account.key)
          if (["completed", "failed", "cancelled"].includes(body.status)) ended.set(job.id, body.status)
        }
      }
      expect(ended.size).toBe(account.jobs.length)
      const spent = account.jobs.reduce((sum, job) => sum + (ended.get(job.id) === "completed" ? job.cost : 0), 0)
      const { body } = await call(server, "GET", "/v1/account", account.key)
      expect(body.account.balanceMicroCents).toBe(account.credited - spent)
    }
    expect(server.output).not.toMatch(/SQLITE_BUSY|database is locked/)
  }, 120_000)
})
