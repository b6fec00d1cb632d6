/**
 * Issue 24's provider outages against the Replicate simulator: a worker process (the engine from
 * its public entries, support/providerWorker.ts) on PostgreSQL while the simulator refuses
 * connections, until it comes back or past the version's deadline; and a start whose answer
 * never comes. An API process (the bundled server, no workers) takes the submits.
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
const JOBS = 10
/** A Replicate video model whose catalog version gives its provider 4 seconds (provider.timeoutSeconds). */
const DEADLINE_VIDEO = `${REPLICATE_VIDEO}-deadline`
const DEADLINE_SECONDS = 4
const CREDITS = 100_000_000

interface JobRow {
  id: string
  status: string
  error: string | null
  provider_phase: string | null
  provider_handle: string | null
  provider_starts: string
  created_at: string
  started_at: string | null
  completed_at: string | null
}

const catalogWithDeadline = () => {
  const catalog = replicateCatalog()
  const video = catalog.models.find((m) => m.slug === REPLICATE_VIDEO)!
  return {
    ...catalog,
    models: [
      ...catalog.models,
      {
        ...video,
        slug: DEADLINE_VIDEO,
        name: DEADLINE_VIDEO,
        versions: video.versions.map((v) => ({ ...v, provider: { ...v.provider!, timeoutSeconds: DEADLINE_SECONDS } }))
      }
    ]
  }
}

describe.skipIf(db === undefined)("a provider that refuses connections, then comes back or not", () => {
  const tally = new Tally()
  const accepted: Array<string> = []
  let sim: ReplicateSimulator
  let servers: Servers
  let api: RunningServer
  let worker: TsProcess
  let tenant: { readonly accountId: string; readonly key: string }

  const submit = async (model: string, prompt: string) => {
    const reply = await call(tally, api, "POST", "/v1/jobs/submit", tenant.key, { model, input: { prompt, sim_duration_ms: 300 } })
    expect(reply.status).toBe(200)
    accepted.push(reply.body.jobId)
    return reply.body.jobId as string
  }
  const rows = (ids: ReadonlyArray<string>) => db!.query<JobRow>("SELECT * FROM genjobs_jobs WHERE id = ANY($1) ORDER BY id", [ids])
  const ledgerKinds = async (id: string) =>
    (await db!.query<{ kind: string }>("SELECT kind FROM genjobs_ledger WHERE job_id = $1 ORDER BY created_at, kind", [id])).map((l) => l.kind)
  const moneyExact = async () => {
    const report = await checkInvariants(db!, { accepted, tally })
    expect(report.violations).toEqual([])
    return report
  }

  beforeAll(async () => {
    sim = await startReplicateSimulator()
    servers = new Servers({ DATABASE_URL: db!.url, ADMIN_TOKEN, JOB_LEASE_MS: "2000" })
    // The API registers Replicate (it runs no workers) so that the catalog, which names it, is accepted.
    api = await servers.start({ WORKER_CONCURRENCY: "0", REPLICATE_API_TOKEN: sim.apiToken, REPLICATE_BASE_URL: sim.url })
    expect((await call(tally, api, "PUT", "/admin/catalog", ADMIN_TOKEN, catalogWithDeadline())).status).toBe(200)
    tenant = await makeTenant(tally, api, { name: "t", creditsMicroCents: CREDITS, maxConcurrentJobs: 100 })
    worker = await startTs("./providerWorker.ts", {
      DATABASE_URL: db!.url,
      FILES_DIR: tempDataDir(),
      REPLICATE_URL: sim.url,
      REPLICATE_TOKEN: sim.apiToken,
      WORKERS: String(JOBS),
      LEASE_MS: "2000",
      POLL_MS: "200"
    }, { readyLine: "worker ready" })
  })
  afterAll(async () => {
    await worker?.stop("SIGKILL")
    await servers?.stopAll()
    await sim?.close()
    await db?.drop()
  })

  it("an outage: every job submitted meanwhile waits, no start recorded, and completes once the provider is back; one start each", async () => {
    await sim.goDown()
    const downAt = Date.now()
    const jobs: Array<string> = []
    for (let i = 0; i < JOBS; i++) jobs.push(await submit(REPLICATE_VIDEO, `outage ${i}`))
    // Each job was refused and asked again four times: they wait, none failed.
    expect(await waitFor(async () => (await rows(jobs)).every((r) => Number(r.provider_starts) >= 5), 30_000)).toBe(true)
    const waiting = await rows(jobs)
    for (const row of waiting) expect(row).toMatchObject({ status: "processing", provider_handle: null })
    await sim.comeBack()
    const upAt = Date.now()

    expect(await settle(db!, 30_000)).toBe(true)
    const done = await rows(jobs)
    for (const row of done) expect(row).toMatchObject({ status: "completed", error: null, provider_phase: "started" })
    for (let i = 0; i < JOBS; i++) expect(sim.counters.startsByMarker.get(`outage ${i}`)).toBe(1)
    expect(sim.counters.starts).toBe(JOBS)
    for (const id of jobs) expect(await ledgerKinds(id)).toEqual(["charge"])
    const report = await moneyExact()
    expect(report.byStatus).toEqual({ completed: JOBS })
    const asked = done.map((r) => Number(r.provider_starts))
    console.log(
      `[fault] provider outage: ${JOBS} jobs submitted while the simulator refused connections for ${upAt - downAt} ms; all completed, ` +
        `${sim.counters.starts} starts at the simulator (1 per job); starts asked per job ${Math.min(...asked)}..${Math.max(...asked)}; ` +
        `last completion ${Math.max(...done.map((r) => Number(r.completed_at))) - upAt} ms after it came back`
    )
  })

  it("an outage that outlasts the version's deadline: PROVIDER_UNAVAILABLE, refunded, nothing started", async () => {
    sim.reset()
    await sim.goDown()
    const jobs = [await submit(DEADLINE_VIDEO, "deadline 0"), await submit(DEADLINE_VIDEO, "deadline 1")]
    expect(await settle(db!, 30_000)).toBe(true)
    await sim.comeBack()
    const failed = await rows(jobs)
    for (const row of failed) {
      expect(row).toMatchObject({ status: "failed", provider_handle: null })
      expect(JSON.parse(row.error!)).toMatchObject({ code: "PROVIDER_UNAVAILABLE" })
      expect(Number(row.completed_at) - Number(row.started_at)).toBeGreaterThanOrEqual(DEADLINE_SECONDS * 1000)
      expect(await ledgerKinds(row.id)).toEqual(["charge", "refund"])
    }
    expect(sim.counters.starts).toBe(0)
    await moneyExact()
    console.log(
      `[fault] provider outage past the deadline (${DEADLINE_SECONDS} s): ${jobs.length} jobs failed PROVIDER_UNAVAILABLE ` +
        `${failed.map((r) => Number(r.completed_at) - Number(r.started_at)).join(", ")} ms after their pickup, refunded, 0 starts`
    )
  })

  it("a start whose answer never comes (the prediction was created): the outcome is unknown, and it is never started again", async () => {
    sim.reset()
    // The worker waits 10 s for an answer (requestTimeoutMs); this one is held back longer.
    sim.answerLateNext(1, 15_000, { on: "start" })
    const job = await submit(REPLICATE_VIDEO, "unknown")
    expect(await settle(db!, 30_000)).toBe(true)
    const [row] = await rows([job])
    expect(row).toMatchObject({ status: "failed", provider_phase: "starting", provider_starts: "1" })
    expect(JSON.parse(row!.error!)).toMatchObject({ code: "INTERNAL_ERROR", message: expect.stringContaining("could not be confirmed") })
    expect(await ledgerKinds(job)).toEqual(["charge", "refund"])
    // Without a public URL the prediction carries no marker to recover it by: one start, never a second.
    expect(sim.counters.startsByMarker.get("unknown")).toBe(1)
    expect(sim.counters.starts).toBe(1)
    await moneyExact()
  })
})
