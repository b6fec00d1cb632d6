import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"
import {
  baseEnv,
  call,
  faultDatabase,
  installCatalog,
  makeTenant,
  type Receiver,
  Servers,
  settle,
  startReceiver,
  Tally,
  TEXT,
  deliveriesSettled
} from "./harness.js"
import { checkInvariants } from "./invariants.js"

const db = await faultDatabase()
const JOBS = 12
/** Short leases so a dead worker's jobs are taken over in about a second (configuration, not code). */
const LEASE_MS = "1000"

describe.skipIf(db === undefined)("a worker process killed with SIGKILL in the middle of its jobs", () => {
  const tally = new Tally()
  let receiver: Receiver
  let servers: Servers
  let api: RunningServer
  const accepted: Array<string> = []

  beforeAll(async () => {
    receiver = await startReceiver()
    servers = new Servers({ ...baseEnv(db!, receiver), JOB_LEASE_MS: LEASE_MS })
    api = await servers.start({ WORKER_CONCURRENCY: "0" })
    await installCatalog(tally, api)
  })
  afterAll(async () => {
    await servers?.stopAll()
    await receiver?.close()
    await db?.drop()
  })

  it("another worker finishes its jobs once each: all terminal, charged once, one webhook each, ledger = balance", async () => {
    const tenant = await makeTenant(tally, api, { name: "t", creditsMicroCents: 100_000_000, maxConcurrentJobs: 100 })
    const doomed = await servers.start({ WORKER_CONCURRENCY: "4" })
    for (let i = 0; i < JOBS; i++) {
      const reply = await call(tally, api, "POST", "/v1/jobs/submit", tenant.key, {
        model: TEXT,
        input: { prompt: `job ${i}`, demoDelayMs: 1_500 },
        webhookUrl: `${receiver.url}/ok`
      })
      expect(reply.status).toBe(200)
      accepted.push(reply.body.jobId)
    }
    const processing = () => db!.query<{ id: string }>("SELECT id FROM genjobs_jobs WHERE status = 'processing'")
    expect(await waitFor(async () => (await processing()).length === 4, 10_000)).toBe(true)

    // Four jobs are half-way through the demo provider's 1.5 s when the process dies.
    await new Promise((r) => setTimeout(r, 500))
    const killedAt = Date.now()
    await doomed.stop("SIGKILL")
    const orphans = (await processing()).map((r) => r.id)
    expect(orphans).toHaveLength(4)

    await servers.start({ WORKER_CONCURRENCY: "4" })
    expect(await settle(db!, 30_000)).toBe(true)
    expect(await deliveriesSettled(db!, 10_000)).toBe(true)
    const settledAt = Date.now()

    const report = await checkInvariants(db!, { accepted, tally, received: receiver.received })
    expect(report.violations).toEqual([])
    expect(report.byStatus).toEqual({ completed: JOBS })
    const rows = await db!.query<{ id: string; attempts: number; started_at: string; completed_at: string }>(
      "SELECT id, attempts, started_at, completed_at FROM genjobs_jobs WHERE id = ANY($1)",
      [orphans]
    )
    for (const row of rows) expect(row.attempts).toBe(2)
    expect(report.reclaimed).toBe(orphans.length)
    // One webhook each, the completed state, answered 204 on the first attempt.
    const delivered = receiver.received.filter((r) => r.path === "/ok")
    expect(delivered.map((r) => r.jobId).sort()).toEqual([...accepted].sort())
    expect(delivered.every((r) => r.status === "completed" && r.attempt === "1")).toBe(true)

    const takeover = Math.max(...rows.map((r) => Number(r.completed_at))) - killedAt
    console.log(
      `[fault] worker SIGKILL: ${orphans.length} jobs orphaned, all ${JOBS} completed once; orphans done ${takeover} ms after the kill (lease ${LEASE_MS} ms, a new worker started after it); settled in ${settledAt - killedAt} ms; answers ${JSON.stringify(tally.summary())}`
    )
  })

  it("the invariant check sees a job ended twice, a refund of a completed job, a balance and spend rollups off the ledger, and a job left running", async () => {
    const [a, b, c] = accepted
    // A second ending would rewrite the row after its webhook was written.
    await db!.query("UPDATE genjobs_jobs SET completed_at = completed_at + 1 WHERE id = $1", [a])
    await db!.query(
      `INSERT INTO genjobs_ledger (id, account_id, job_id, kind, amount_micro_cents, created_at)
       SELECT 'led_fault', account_id, id, 'refund', cost_micro_cents, 0 FROM genjobs_jobs WHERE id = $1`,
      [b]
    )
    await db!.query("UPDATE genjobs_jobs SET status = 'processing' WHERE id = $1", [c])
    const report = await checkInvariants(db!, { accepted, tally, received: [...receiver.received, receiver.received[0]!] })
    expect(report.violations.map((v) => v.replace(/\b(job|acc|whd|req)_[A-Za-z0-9_-]+/g, "$1_*"))).toEqual([
      "job job_* is still processing",
      "job job_* completed was refunded {\"amount\":10000,\"n\":1}",
      "account acc_*: balance 99880000 but ledger sums to 99890000",
      // The injected refund is in the ledger but in no spend rollup.
      expect.stringMatching(/^account acc_\*: spend rollups \(charged refunded jobs failed cancelled\) (\d+) 0 (\d+) 0 0 but the ledger says \1 10000 \2 0 0$/),
      expect.stringMatching(/^delivery whd_\* carries completed at .* but job job_\* is completed at /),
      expect.stringMatching(/^delivery whd_\* carries completed at .* but job job_\* is processing at /),
      "job job_* processing has 1 webhook deliveries",
      "receiver got whd_* #1 twice"
    ])
  })
})
