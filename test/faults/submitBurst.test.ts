import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/serverProcess.js"
import {
  ADMIN_TOKEN,
  baseEnv,
  call,
  faultDatabase,
  installCatalog,
  JOB_COST,
  makeTenant,
  type Receiver,
  type Reply,
  Servers,
  settle,
  startReceiver,
  Tally,
  TEXT
} from "./harness.js"
import { checkInvariants } from "./invariants.js"

const db = await faultDatabase()
const SUBMITS = 1_000

/** Each account is short of one thing: credit for 37 jobs, 25 jobs at once, or both (30 and 20). */
const ACCOUNTS = [
  { name: "balance", credits: 37, maxConcurrentJobs: 1_000, admits: 37 },
  { name: "concurrency", credits: 10_000, maxConcurrentJobs: 25, admits: 25 },
  { name: "both", credits: 30, maxConcurrentJobs: 20, admits: 20 }
] as const

describe.skipIf(db === undefined)("1,000 submits at once to two API processes, against balance and concurrency limits", () => {
  const tally = new Tally()
  let receiver: Receiver
  let servers: Servers
  let apis: Array<RunningServer>

  beforeAll(async () => {
    receiver = await startReceiver()
    servers = new Servers(baseEnv(db!, receiver))
    // No workers while the burst lands: no job ends and frees a slot, so the limits are exact.
    // No load shedding either (submitShedding.test.ts has it): every submit reaches the limits.
    const api = { WORKER_CONCURRENCY: "0", STORE_WAIT_MS: "0" }
    const first = await servers.start(api)
    apis = [first, await servers.start(api)]
    await installCatalog(tally, first)
  })
  afterAll(async () => {
    await servers?.stopAll()
    await receiver?.close()
    await db?.drop()
  })

  it("admits exactly what each account allows, answers the rest 402 or 429 (never 500), and charges each admitted job once", async () => {
    const tenants = await Promise.all(ACCOUNTS.map((a) =>
      makeTenant(tally, apis[0]!, { name: a.name, creditsMicroCents: a.credits * JOB_COST, maxConcurrentJobs: a.maxConcurrentJobs })
    ))
    tally.phase = "burst"
    const started = Date.now()
    const replies = await Promise.all(Array.from({ length: SUBMITS }, (_, i) =>
      call(tally, apis[i % 2]!, "POST", "/v1/jobs/submit", tenants[i % 3]!.key, { model: TEXT, input: { prompt: `burst ${i}` } })
        .then((reply) => ({ account: i % 3, reply }))
    ))
    const took = Date.now() - started
    const byAccount = ACCOUNTS.map((_, a) => replies.filter((r) => r.account === a).map((r) => r.reply))
    const statuses = (rs: ReadonlyArray<Reply>) =>
      rs.reduce<Record<string, number>>((counts, r) => ({ ...counts, [r.status]: (counts[r.status] ?? 0) + 1 }), {})

    // Workers start only now: every admitted job must still run, once.
    tally.phase = "drain"
    await servers.start({ WORKER_CONCURRENCY: "8" })
    expect(await settle(db!, 60_000)).toBe(true)
    const accepted = replies.flatMap((r) => (r.reply.status === 200 ? [r.reply.body.jobId as string] : []))
    const report = await checkInvariants(db!, { accepted, tally })
    console.log(
      `[fault] burst: ${SUBMITS} submits answered in ${took} ms (${Math.round(SUBMITS / (took / 1000))}/s) by 2 API processes; ${
        ACCOUNTS.map((a, i) => `${a.name}: ${JSON.stringify(statuses(byAccount[i]!))}`).join("; ")
      }; jobs ${JSON.stringify(report.byStatus)}`
    )
    expect(report.violations).toEqual([])
    expect(tally.count(500)).toBe(0)
    expect(tally.count(0)).toBe(0)
    ACCOUNTS.forEach((account, i) => {
      const rs = byAccount[i]!
      expect(rs.filter((r) => r.status === 200)).toHaveLength(account.admits)
      const refusedWith = account.name === "balance" ? [402] : account.name === "concurrency" ? [429] : [402, 429]
      for (const r of rs.filter((r) => r.status !== 200)) expect(refusedWith).toContain(r.status)
    })
    expect(report.byStatus).toEqual({ completed: ACCOUNTS.reduce((n, a) => n + a.admits, 0) })
    for (const [i, account] of ACCOUNTS.entries()) {
      const reply = await call(tally, apis[1]!, "GET", `/admin/accounts/${tenants[i]!.accountId}`, ADMIN_TOKEN)
      expect(reply.body.balanceMicroCents).toBe((account.credits - account.admits) * JOB_COST)
    }
  })
})
