/**
 * Issue 9's provider limits across processes: two worker processes share a limit of 2
 * generations in flight at the Replicate simulator (the catalog's `providers[].limits`). Jobs
 * over the limit wait pending, can be cancelled with a refund meanwhile, and run when room frees.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { type RunningServer, tempDataDir } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"
import { ADMIN_TOKEN, call, faultDatabase, makeTenant, Servers, settle, Tally } from "./harness.js"
import { checkInvariants } from "./invariants.js"
import { startTs, type TsProcess } from "./support/childProcess.js"
import { REPLICATE_VIDEO, replicateCatalog } from "./support/replicateCatalog.js"

const db = await faultDatabase()
/** 5 credits at the default CREDIT_MICRO_CENTS. */
const JOB_COST = 50_000
const CREDITS = 100_000_000

describe.skipIf(db === undefined)("a provider limit of 2 in flight, held by two worker processes", () => {
  const tally = new Tally()
  const filesDir = tempDataDir()
  const workers: Array<TsProcess> = []
  let sim: ReplicateSimulator
  let servers: Servers
  let api: RunningServer
  let tenant: { readonly accountId: string; readonly key: string }

  beforeAll(async () => {
    sim = await startReplicateSimulator()
    servers = new Servers({ DATABASE_URL: db!.url, ADMIN_TOKEN })
    // The API registers Replicate (it runs no workers) so that the catalog, which names it, is accepted.
    api = await servers.start({ WORKER_CONCURRENCY: "0", REPLICATE_API_TOKEN: sim.apiToken, REPLICATE_BASE_URL: sim.url })
    const catalog = replicateCatalog()
    const limited = { ...catalog, providers: catalog.providers.map((p) => ({ ...p, limits: { maxInFlight: 2 } })) }
    expect((await call(tally, api, "PUT", "/admin/catalog", ADMIN_TOKEN, limited)).status).toBe(200)
    tenant = await makeTenant(tally, api, { name: "t", creditsMicroCents: CREDITS, maxConcurrentJobs: 100 })
    for (let i = 0; i < 2; i++) {
      workers.push(
        await startTs("./providerWorker.ts", {
          DATABASE_URL: db!.url,
          FILES_DIR: filesDir,
          REPLICATE_URL: sim.url,
          REPLICATE_TOKEN: sim.apiToken,
          WORKERS: "4",
          LEASE_MS: "10000",
          POLL_MS: "300"
        }, { readyLine: "worker ready" })
      )
    }
  })
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop("SIGKILL")))
    await servers?.stopAll()
    await sim?.close()
    await db?.drop()
  })

  it("10 jobs: never more than 2 at the simulator, waiting ones cancelled and refunded, the rest completed", async () => {
    const accepted: Array<string> = []
    for (let i = 0; i < 10; i++) {
      const reply = await call(tally, api, "POST", "/v1/jobs/submit", tenant.key, {
        model: REPLICATE_VIDEO,
        input: { prompt: `limited ${i}`, sim_duration_ms: 1_000 }
      })
      expect(reply.status).toBe(200)
      accepted.push(reply.body.jobId)
    }
    // Two run; the other eight wait pending, with 8 free worker fibers between the processes.
    expect(await waitFor(() => sim.counters.inFlight === 2, 20_000)).toBe(true)
    const waiting = await db!.query<{ id: string }>("SELECT id FROM genjobs_jobs WHERE status = 'pending' ORDER BY created_at DESC")
    expect(waiting.length).toBeGreaterThanOrEqual(6)
    const cancelled = waiting.slice(0, 2).map((r) => r.id)
    for (const id of cancelled) {
      const reply = await call(tally, api, "POST", `/v1/jobs/${id}/cancel`, tenant.key)
      expect(reply.status).toBe(200)
      expect(reply.body).toMatchObject({ status: "cancelled", refundedMicroCents: JOB_COST })
    }

    expect(await settle(db!, 60_000)).toBe(true)
    const rows = await db!.query<{ id: string; status: string }>("SELECT id, status FROM genjobs_jobs")
    for (const row of rows) expect(row.status).toBe(cancelled.includes(row.id) ? "cancelled" : "completed")
    expect(sim.counters.maxInFlight).toBe(2)
    expect(sim.counters.starts).toBe(8)
    const report = await checkInvariants(db!, { accepted, tally })
    expect(report.violations).toEqual([])
    const [account] = await db!.query<{ balance: string }>("SELECT balance_micro_cents AS balance FROM genjobs_accounts WHERE id = $1", [
      tenant.accountId
    ])
    expect(Number(account!.balance)).toBe(CREDITS - 8 * JOB_COST)
    console.log(
      `[fault] provider limit 2: 10 jobs on 2 worker processes x 4; most in flight at the simulator ${sim.counters.maxInFlight}; 2 waiting jobs cancelled and refunded; 8 completed`
    )
  })
})
