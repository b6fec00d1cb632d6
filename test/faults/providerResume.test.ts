/**
 * Issue 9's crash checks against the Replicate simulator: worker processes (the engine from its
 * public entries with the Replicate adapter, support/providerWorker.ts) killed or frozen in the
 * middle of generations, and a provider answering 429. An API process (the bundled server, no
 * workers) takes the submits. Leases are 2 s (configuration, not code).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { type RunningServer, tempDataDir } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"
import { ADMIN_TOKEN, call, faultDatabase, makeTenant, Servers, settle, Tally } from "./harness.js"
import { checkInvariants } from "./invariants.js"
import { startTs, type TsProcess } from "./support/childProcess.js"
import { REPLICATE_VIDEO, replicateCatalog } from "./support/replicateCatalog.js"
import { FILES_PUBLIC_URL } from "./support/replicateEngine.js"

const db = await faultDatabase()
const LEASE_MS = 2_000
/** 5 credits at the default CREDIT_MICRO_CENTS. */
const JOB_COST = 50_000
const CREDITS = 100_000_000

interface JobRow {
  id: string
  status: string
  attempts: number
  error: string | null
  outputs: string | null
  lease_owner: string | null
  provider_phase: string | null
  provider_handle: string | null
  provider_starts: string
  created_at: string
  completed_at: string | null
}

describe.skipIf(db === undefined)("worker processes killed or frozen while the Replicate simulator generates", () => {
  const tally = new Tally()
  const filesDir = tempDataDir()
  const workers: Array<TsProcess> = []
  const accepted: Array<string> = []
  let sim: ReplicateSimulator
  let servers: Servers
  let api: RunningServer
  let tenant: { readonly accountId: string; readonly key: string }
  let mp4: Buffer
  /** A worker process that takes jobs over; paused (SIGSTOP) while another worker claims, so that one gets the jobs. */
  let rescuer: TsProcess

  const startWorker = async (concurrency: number) => {
    const worker = await startTs("./providerWorker.ts", {
      DATABASE_URL: db!.url,
      FILES_DIR: filesDir,
      REPLICATE_URL: sim.url,
      REPLICATE_TOKEN: sim.apiToken,
      WORKERS: String(concurrency),
      LEASE_MS: String(LEASE_MS),
      POLL_MS: "500"
    }, { readyLine: "worker ready" })
    workers.push(worker)
    return worker
  }

  const submit = async (prompt: string, durationMs: number) => {
    const reply = await call(tally, api, "POST", "/v1/jobs/submit", tenant.key, {
      model: REPLICATE_VIDEO,
      input: { prompt, sim_duration_ms: durationMs }
    })
    expect(reply.status).toBe(200)
    accepted.push(reply.body.jobId)
    return reply.body.jobId as string
  }

  const rows = (ids: ReadonlyArray<string>) => db!.query<JobRow>("SELECT * FROM genjobs_jobs WHERE id = ANY($1) ORDER BY id", [ids])

  /** The stored file of a completed job's first output, read from the workers' shared directory. */
  const storedOutput = (row: JobRow) => {
    const url = JSON.parse(row.outputs!)[0].url as string
    expect(url.startsWith(`${FILES_PUBLIC_URL}/files/`)).toBe(true)
    return readFileSync(join(filesDir, url.slice(`${FILES_PUBLIC_URL}/files/`.length)))
  }

  /** Every invariant of the suite, and the account's balance what the charges left. */
  const moneyExact = async () => {
    const report = await checkInvariants(db!, { accepted, tally })
    expect(report.violations).toEqual([])
    const [account] = await db!.query<{ balance: string }>("SELECT balance_micro_cents AS balance FROM genjobs_accounts WHERE id = $1", [
      tenant.accountId
    ])
    expect(Number(account!.balance)).toBe(CREDITS - accepted.length * JOB_COST)
    return report
  }

  beforeAll(async () => {
    sim = await startReplicateSimulator()
    mp4 = Buffer.from(await (await fetch(`${sim.url}/files/any/output.mp4`)).arrayBuffer())
    servers = new Servers({ DATABASE_URL: db!.url, ADMIN_TOKEN, JOB_LEASE_MS: String(LEASE_MS) })
    // The API registers Replicate (it runs no workers) so that the catalog, which names it, is accepted.
    api = await servers.start({ WORKER_CONCURRENCY: "0", REPLICATE_API_TOKEN: sim.apiToken, REPLICATE_BASE_URL: sim.url })
    const catalog = await call(tally, api, "PUT", "/admin/catalog", ADMIN_TOKEN, replicateCatalog())
    expect(catalog.status).toBe(200)
    tenant = await makeTenant(tally, api, { name: "t", creditsMicroCents: CREDITS, maxConcurrentJobs: 100 })
  })
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop("SIGKILL")))
    await servers?.stopAll()
    await sim?.close()
    await db?.drop()
  })

  it("SIGKILL mid-generation: another worker process resumes each stored handle; one start per job, money exact", async () => {
    rescuer = await startWorker(4)
    rescuer.signal("SIGSTOP")
    const doomed = await startWorker(4)
    const jobs = await Promise.all([0, 1, 2, 3].map((i) => submit(`kill ${i}`, 4_000)))
    // Mid-generation: every handle committed, the predictions running at the simulator.
    expect(await waitFor(async () => (await rows(jobs)).every((r) => r.provider_phase === "started"), 20_000)).toBe(true)
    expect(sim.counters.inFlight).toBe(4)
    rescuer.signal("SIGCONT")
    const killedAt = Date.now()
    await doomed.stop("SIGKILL")

    expect(await settle(db!, 30_000)).toBe(true)
    const done = await rows(jobs)
    const lastCompletion = Math.max(...done.map((r) => Number(r.completed_at)))
    for (const [i, row] of done.entries()) {
      expect(row).toMatchObject({ status: "completed", attempts: 2, error: null, provider_starts: "1" })
      expect(row.lease_owner).toBeNull()
      expect(storedOutput(row).equals(mp4)).toBe(true)
      expect(sim.counters.startsByMarker.get(`kill ${i}`)).toBe(1)
    }
    expect(sim.counters.starts).toBe(4)
    const report = await moneyExact()
    expect(report.byStatus).toEqual({ completed: 4 })
    expect(rescuer.output).not.toMatch(/job run failed unexpectedly/)
    console.log(
      `[fault] provider SIGKILL: 4 generations of 4 s in flight; all completed by the other worker ${lastCompletion - killedAt} ms after the kill (lease ${LEASE_MS} ms); starts ${sim.counters.starts} (1 per job), polls ${sim.counters.polls}`
    )
  })

  it("a lease lost while frozen (SIGSTOP): the other worker resumes the handle; the first, resumed, starts nothing and leaves the winner's output intact", async () => {
    rescuer.signal("SIGSTOP")
    const frozen = await startWorker(1)
    const job = await submit("frozen", 5_000)
    expect(await waitFor(async () => (await rows([job]))[0]!.provider_phase === "started", 20_000)).toBe(true)
    const [before] = await rows([job])
    rescuer.signal("SIGCONT")
    frozen.signal("SIGSTOP")
    const stoppedAt = Date.now()

    // The rescuer takes the job over once the lease expires.
    expect(await waitFor(async () => (await rows([job]))[0]!.attempts === 2, 20_000)).toBe(true)
    const [takenOver] = await rows([job])
    expect(takenOver!.lease_owner).not.toBe(before!.lease_owner)
    expect(takenOver!.provider_handle).toBe(before!.provider_handle)
    expect(await settle(db!, 30_000)).toBe(true)
    const [won] = await rows([job])
    expect(won).toMatchObject({ status: "completed", attempts: 2, error: null })
    const winnerFile = storedOutput(won!)
    expect(winnerFile.equals(mp4)).toBe(true)

    frozen.signal("SIGCONT")
    const resumedAt = Date.now()
    // The first worker wakes inside the job's run: it learns the lease is gone (a refused renewal
    // or a refused completion) and stops, removing whatever it wrote.
    expect(await waitFor(() => /lease lost|the job ended elsewhere/.test(frozen.output), 20_000)).toBe(true)
    await new Promise((r) => setTimeout(r, 1_000))

    const [after] = await rows([job])
    expect(after).toEqual(won)
    expect(storedOutput(after!).equals(mp4)).toBe(true)
    // Only the winner's files of this job remain (the output and its content-type sidecar).
    const winnerKey = JSON.parse(won!.outputs!)[0].url.slice(`${FILES_PUBLIC_URL}/files/`.length) as string
    expect(readdirSync(filesDir).filter((f) => f.startsWith(job)).sort()).toEqual([winnerKey, `${winnerKey}.type`])
    expect(existsSync(join(filesDir, ".incoming")) ? readdirSync(join(filesDir, ".incoming")).filter((f) => f.startsWith(job)) : []).toEqual([])
    expect(sim.counters.startsByMarker.get("frozen")).toBe(1)
    expect(sim.counters.starts).toBe(5)
    await moneyExact()
    console.log(
      `[fault] provider lease lost: frozen ${resumedAt - stoppedAt} ms; taken over and completed ${Number(won!.completed_at) - stoppedAt} ms after the SIGSTOP; after SIGCONT the first worker logged "${/lease lost|the job ended elsewhere/.exec(frozen.output)![0]}"; starts for the job 1`
    )
  })

  it("a provider answering 429 three times, then accepting: the job completes, no failure recorded", async () => {
    sim.rateLimitNext(3, { retryAfterSeconds: 1, on: "start" })
    const job = await submit("busy", 300)
    expect(await settle(db!, 30_000)).toBe(true)
    const [row] = await rows([job])
    expect(row).toMatchObject({ status: "completed", attempts: 1, error: null, provider_phase: "started" })
    expect(storedOutput(row!).equals(mp4)).toBe(true)
    // Each 429 said Retry-After: 1, and the engine waits at least that long: three were met.
    expect(Number(row!.completed_at) - Number(row!.created_at)).toBeGreaterThanOrEqual(3_000)
    expect(sim.counters.startsByMarker.get("busy")).toBe(1)
    const ledger = await db!.query<{ kind: string }>("SELECT kind FROM genjobs_ledger WHERE job_id = $1", [job])
    expect(ledger.map((l) => l.kind)).toEqual(["charge"])
    await moneyExact()
    console.log(
      `[fault] provider 429 x3: completed ${Number(row!.completed_at) - Number(row!.created_at)} ms after submit; provider_starts ${row!.provider_starts}; one start at the simulator`
    )
  })
})
