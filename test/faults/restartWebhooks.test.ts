import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"
import {
  baseEnv,
  call,
  deliveriesSettled,
  faultDatabase,
  installCatalog,
  makeTenant,
  type Receiver,
  Servers,
  settle,
  startReceiver,
  Tally,
  TEXT
} from "./harness.js"
import { checkInvariants } from "./invariants.js"

const db = await faultDatabase()
const FAILED_ONCE = 8
const RUNNING = 2
/**
 * Configuration, not code: the first retry 3 s after a failed attempt (the spec's is 1 s: long
 * enough here that no retry comes before the kill), a 2 s attempt deadline (30 s), and 1 s job
 * leases (60 s), so a crash is recovered from in seconds.
 */
const ENV = { WEBHOOK_RETRY_DELAYS_MS: "3000,100,100,100,100", WEBHOOK_DEADLINE_MS: "2000", JOB_LEASE_MS: "1000" }

describe.skipIf(db === undefined)("the server killed and restarted with webhooks pending", () => {
  const tally = new Tally()
  let receiver: Receiver
  let servers: Servers
  let first: RunningServer

  beforeAll(async () => {
    receiver = await startReceiver()
    servers = new Servers({ ...baseEnv(db!, receiver), ...ENV })
    first = await servers.start({ WORKER_CONCURRENCY: "4" })
    await installCatalog(tally, first)
  })
  afterAll(async () => {
    await servers?.stopAll()
    await receiver?.close()
    await db?.drop()
  })

  it("after a SIGKILL the next process sends every pending webhook once and finishes the jobs that were running", async () => {
    const tenant = await makeTenant(tally, first, { name: "t", creditsMicroCents: 10_000_000, maxConcurrentJobs: 100 })
    receiver.flakyDown = true
    const accepted: Array<string> = []
    const submit = async (demoDelayMs: number) => {
      const reply = await call(tally, first, "POST", "/v1/jobs/submit", tenant.key, {
        model: TEXT,
        input: { prompt: "p", demoDelayMs },
        webhookUrl: `${receiver.url}/flaky`
      })
      expect(reply.status).toBe(200)
      accepted.push(reply.body.jobId)
    }
    // Two jobs still running at the kill, beside quick ones whose webhooks have failed once.
    for (let i = 0; i < RUNNING; i++) await submit(6_000)
    for (let i = 0; i < FAILED_ONCE; i++) await submit(0)
    const waiting = async () =>
      (await db!.query(
        "SELECT id FROM genjobs_webhook_deliveries WHERE status = 'pending' AND attempts <> '[]' AND lease_owner IS NULL"
      )).length
    const running = async () => (await db!.query("SELECT id FROM genjobs_jobs WHERE status = 'processing'")).length
    expect(await waitFor(async () => (await waiting()) === FAILED_ONCE && (await running()) === RUNNING, 15_000)).toBe(true)

    await first.stop("SIGKILL")
    receiver.flakyDown = false
    const restarting = Date.now()
    const second = await servers.start({ WORKER_CONCURRENCY: "4" })
    const up = Date.now()
    expect(await settle(db!, 20_000)).toBe(true)
    expect(await deliveriesSettled(db!, 20_000)).toBe(true)
    const done = Date.now()

    const report = await checkInvariants(db!, { accepted, tally, received: receiver.received })
    const deliveries = await db!.query<{ job_id: string; status: string; attempts: string }>(
      "SELECT job_id, status, attempts FROM genjobs_webhook_deliveries"
    )
    const codes = (d: { attempts: string }) => (JSON.parse(d.attempts) as Array<{ statusCode: number | null }>).map((a) => a.statusCode)
    console.log(
      `[fault] restart: ${FAILED_ONCE} webhooks pending a retry and ${RUNNING} jobs running at the SIGKILL; the new process was up ${up - restarting} ms after, everything delivered ${done - up} ms after that; attempts ${JSON.stringify(deliveries.map(codes))}`
    )
    expect(report.violations).toEqual([])
    expect(report.byStatus).toEqual({ completed: FAILED_ONCE + RUNNING })
    expect(deliveries).toHaveLength(FAILED_ONCE + RUNNING)
    for (const delivery of deliveries) expect(delivery.status).toBe("sent")
    expect(deliveries.map(codes).sort()).toEqual([
      ...Array.from({ length: RUNNING }, () => [204]),
      ...Array.from({ length: FAILED_ONCE }, () => [503, 204])
    ].sort())
    // The receiver saw each attempt once: attempt 1 (503) before the crash, attempt 2 after.
    expect(receiver.received).toHaveLength(2 * FAILED_ONCE + RUNNING)
    expect(second.output).not.toContain("unhandled error")
  })
})
