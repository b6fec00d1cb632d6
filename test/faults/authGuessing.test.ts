import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { RunningServer } from "../support/serverProcess.js"
import { ADMIN_TOKEN, call, faultDatabase, installCatalog, makeTenant, Servers, Tally, TEXT } from "./harness.js"
import { checkInvariants } from "./invariants.js"

const db = await faultDatabase()
const LIMIT = 30
/** Guesses in flight at once: the throttle may let through at most this many more than its limit (check, then count). */
const IN_FLIGHT = 4

/**
 * Issue 24, item 6: 200 wrong admin tokens and 200 wrong API keys from one address, spread over
 * two server processes on one PostgreSQL database, IN_FLIGHT at a time. The processes count the
 * failures together: at most the limit (and what was in flight when it was reached) get 401,
 * the rest 429 with Retry-After, the right token and key from that address too.
 */
describe.skipIf(db === undefined)("credential guessing against two processes on PostgreSQL", () => {
  const tally = new Tally()
  let servers: Servers
  let a: RunningServer
  let b: RunningServer

  beforeAll(async () => {
    servers = new Servers({ DATABASE_URL: db!.url, ADMIN_TOKEN, WORKER_CONCURRENCY: "0" })
    a = await servers.start()
    b = await servers.start()
  })
  afterAll(async () => {
    await servers?.stopAll()
    await db?.drop()
  })

  /** `total` requests, IN_FLIGHT at a time, alternating between the processes; answers their statuses. */
  const burst = async (total: number, method: string, path: string, token: () => string, body?: unknown) => {
    const statuses: Array<number> = []
    for (let i = 0; i < total; i += IN_FLIGHT) {
      const replies = await Promise.all(
        Array.from({ length: IN_FLIGHT }, (_, j) => call(tally, (i + j) % 2 === 0 ? a : b, method, path, token(), body))
      )
      for (const reply of replies) {
        statuses.push(reply.status)
        if (reply.status === 429) expect(Number(reply.retryAfter)).toBeGreaterThanOrEqual(1)
      }
    }
    return statuses
  }

  it("answers 429 once the failures reach the limit, counted across both processes", async () => {
    await installCatalog(tally, a)
    const tenant = await makeTenant(tally, a, { name: "guessed", creditsMicroCents: 1_000_000 })
    const started = Date.now()
    const admin = await burst(200, "GET", "/admin/accounts", () => randomBytes(16).toString("hex"))
    const unauthorized = admin.filter((s) => s === 401).length
    expect(unauthorized).toBeGreaterThanOrEqual(LIMIT)
    expect(unauthorized).toBeLessThan(LIMIT + IN_FLIGHT)
    expect(admin.filter((s) => s === 429)).toHaveLength(200 - unauthorized)
    const submit = { model: TEXT, input: { prompt: "guess" } }
    const keys = await burst(200, "POST", "/v1/jobs/submit", () => `gjk_${randomBytes(32).toString("base64url")}`, submit)
    expect(keys.every((s) => s === 429)).toBe(true)
    for (const server of [a, b]) {
      expect((await call(tally, server, "GET", "/admin/accounts", ADMIN_TOKEN)).status).toBe(429)
      expect((await call(tally, server, "POST", "/v1/jobs/submit", tenant.key, submit)).status).toBe(429)
    }
    console.log(`[fault] guessing: 400 guesses from one address over 2 processes in ${Date.now() - started} ms; ${unauthorized} answered 401, the rest 429`)
    // Not one job stored, nothing charged: the throttled submits, the right key's included, touched nothing.
    const report = await checkInvariants(db!, { accepted: [], unconfirmed: [], tally })
    expect(report.violations).toEqual([])
    expect(tally.serverErrors).toEqual([])
  })
})
