import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"
import { ADMIN_TOKEN, call, faultDatabase, installCatalog, JOB_COST, makeTenant, type Reply, Tally, TEXT } from "./harness.js"

const db = await faultDatabase()
const SUBMITS = 1_000
const POOL = 10
const ACCOUNTS = 50
// What the issue asks of every answer to the surplus, with the default bound (STORE_WAIT_MS, 1 s).
const SURPLUS_WITHIN_MS = 1_500
// Each job insert holds its connection this long, as a loaded database does: ten connections
// then serve at most 500 submits a second, so 1,000 at once are more than the pool serves in
// the bound on any machine.
const INSERT_HOLD_SECONDS = 0.02

describe.skipIf(db === undefined)("1,000 submits at once to a server whose pool has 10 connections", () => {
  const tally = new Tally()
  let server: RunningServer

  beforeAll(async () => {
    server = await startServer({
      DATABASE_URL: db!.url,
      ADMIN_TOKEN,
      DATA_DIR: tempDataDir(),
      WORKER_CONCURRENCY: "0",
      DATABASE_POOL_SIZE: String(POOL),
      LOG_LEVEL: "error"
    })
    await installCatalog(tally, server)
    await db!.query(
      `CREATE FUNCTION slow_insert() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(${INSERT_HOLD_SECONDS}); RETURN NEW; END $$ LANGUAGE plpgsql`
    )
    await db!.query("CREATE TRIGGER slow_insert BEFORE INSERT ON genjobs_jobs FOR EACH ROW EXECUTE FUNCTION slow_insert()")
  })
  afterAll(async () => {
    await server?.stop("SIGKILL")
    await db?.drop()
  })

  it("answers the surplus 503 store_busy with Retry-After within 1.5 s, and charges and queues exactly the jobs it accepted, once", async () => {
    // Many accounts, so the pool, not one account's row lock, is what the submits wait for.
    const tenants: Array<{ readonly accountId: string; readonly key: string }> = []
    for (let i = 0; i < ACCOUNTS; i++) {
      tenants.push(await makeTenant(tally, server, { name: `burst ${i}`, creditsMicroCents: SUBMITS * JOB_COST, maxConcurrentJobs: SUBMITS }))
    }
    // What this machine takes, now, to answer 1,000 requests at once that touch no store: the
    // surplus's answers may take twice that on top of the bound, as each also reads a body and
    // a key (a 2-core machine shared with other suites takes seconds; a quiet one, a few hundred
    // milliseconds).
    const floorStarted = performance.now()
    await Promise.all(Array.from({ length: SUBMITS }, () => fetch(`${server.url}/health`).then((r) => r.text())))
    const floorMs = Math.round(performance.now() - floorStarted)
    tally.phase = "burst"
    const replies = await Promise.all(Array.from({ length: SUBMITS }, async (_, i) => {
      const started = performance.now()
      const reply: Reply = await call(tally, server, "POST", "/v1/jobs/submit", tenants[i % ACCOUNTS]!.key, { model: TEXT, input: { prompt: `burst ${i}` } })
      return { ...reply, account: i % ACCOUNTS, ms: performance.now() - started }
    }))
    const accepted = replies.filter((r) => r.status === 200)
    const surplus = replies.filter((r) => r.status !== 200)
    const slowest = (rs: typeof replies) => Math.round(Math.max(0, ...rs.map((r) => r.ms)))
    console.log(
      `[fault] shedding: ${SUBMITS} submits, pool ${POOL}: ${accepted.length} accepted (slowest ${slowest(accepted)} ms), ${surplus.length} shed (slowest ${
        slowest(surplus)
      } ms); 1,000 requests that touch no store: ${floorMs} ms`
    )

    expect(accepted.length).toBeGreaterThan(0)
    expect(surplus.length).toBeGreaterThan(0)
    for (const reply of surplus) {
      expect({ status: reply.status, code: reply.body?.error?.code, reason: reply.body?.error?.details?.reason })
        .toEqual({ status: 503, code: "PUBSUB_PUBLISH_FAILED", reason: "store_busy" })
      expect(Number(reply.retryAfter)).toBeGreaterThanOrEqual(1)
    }
    expect(slowest(surplus)).toBeLessThan(SURPLUS_WITHIN_MS + 2 * floorMs)

    // Accepted: each job stored once, pending, charged once. Shed: no job, no charge.
    const ids = accepted.map((r) => r.body.jobId as string).sort()
    const jobs = await db!.query<{ id: string; status: string }>("SELECT id, status FROM genjobs_jobs")
    expect(jobs.map((j) => j.id).sort()).toEqual(ids)
    expect(new Set(jobs.map((j) => j.status))).toEqual(new Set(["pending"]))
    const charges = await db!.query<{ job_id: string }>("SELECT job_id FROM genjobs_ledger WHERE job_id IS NOT NULL")
    expect(charges.map((c) => c.job_id).sort()).toEqual(ids)
    for (const [i, tenant] of tenants.entries()) {
      const admitted = accepted.filter((r) => r.account === i).length
      const account = await call(tally, server, "GET", `/admin/accounts/${tenant.accountId}`, ADMIN_TOKEN)
      expect(account.body.balanceMicroCents).toBe((SUBMITS - admitted) * JOB_COST)
    }
    expect(tally.serverErrors).toEqual([])
    expect(tally.unavailableWithoutRetryAfter).toEqual([])
  })
})
