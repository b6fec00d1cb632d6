/**
 * A worker process SIGKILLed while `n` generations wait on its watch list at the Replicate
 * simulator, then a new worker process: every job completes on the prediction it has, none is
 * started twice. Used by the fault suite at 10,000 and by `npm test` at 1,000.
 */
import { Effect, Layer, Redacted, References } from "effect"
import { Admin, Auth, Catalog, Jobs, makeEngine } from "genjobs"
import { memoryFiles } from "genjobs/memory"
import { postgresStore } from "genjobs/postgres"
import { REPLICATE_PROVIDER_ID, replicateProvider } from "genjobs/providers/replicate"
import { expect } from "vitest"
import { startReplicateSimulator } from "../../simulators/replicate.js"
import { tempDataDir } from "../../support/serverProcess.js"
import { waitFor } from "../../support/waitFor.js"
import { type FaultDb, settle } from "../harness.js"
import { startTs, type TsProcess } from "./childProcess.js"
import { REPLICATE_VIDEO, replicateCatalog } from "./replicateCatalog.js"

/** Long enough that renewals behind a burst of writes on a loaded machine do not lose leases (each loss costs an attempt). */
const LEASE_MS = 15_000
/** Submits in flight at once. */
const SUBMITTERS = 16

type RequestIdOf = Parameters<Jobs["Service"]["submit"]>[2]

const count = async (db: FaultDb, where: string) =>
  Number((await db.query<{ n: string }>(`SELECT COUNT(*) AS n FROM genjobs_jobs WHERE ${where}`))[0]!.n)

export const watchCrash = async (db: FaultDb, n: number, generationMs: number) => {
  const sim = await startReplicateSimulator()
  const workers: Array<TsProcess> = []
  const filesDir = tempDataDir()
  const startWorker = async () => {
    const worker = await startTs("./providerWorker.ts", {
      DATABASE_URL: db.url,
      FILES_DIR: filesDir,
      REPLICATE_URL: sim.url,
      REPLICATE_TOKEN: sim.apiToken,
      WORKERS: String(n),
      LEASE_MS: String(LEASE_MS),
      POLL_MS: "5000"
    }, { readyLine: "worker ready" })
    workers.push(worker)
    return worker
  }
  // The jobs are submitted in this process by an engine with no workers, on the same database.
  const submitter = await makeEngine({
    store: postgresStore({ url: Redacted.make(db.url) }),
    files: memoryFiles({ publicUrl: "http://files.invalid" }),
    providers: { [REPLICATE_PROVIDER_ID]: replicateProvider({ apiToken: sim.apiToken, baseUrl: sim.url }) },
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    observability: Layer.succeed(References.MinimumLogLevel, "Warn")
  })
  try {
    const caller = await submitter.run(Effect.gen(function*() {
      yield* (yield* Catalog).replace(replicateCatalog())
      const account = yield* (yield* Admin).createAccount({
        name: "t",
        creditsMicroCents: 1_000_000_000_000,
        maxConcurrentJobs: n,
        segments: [],
        allowedModels: [],
        discounts: []
      })
      const key = yield* (yield* Admin).createKey(account.id, { name: "k", scopes: [], allowedIPs: [], expiresAt: null })
      return yield* (yield* Auth).authenticate({ authorization: `Bearer ${key.secret}` })
    }))
    let next = 0
    await Promise.all(Array.from({ length: SUBMITTERS }, async () => {
      while (next < n) {
        const i = next++
        await submitter.run(Effect.flatMap(Jobs, (jobs) =>
          jobs.submit(caller, { model: REPLICATE_VIDEO, input: { prompt: `watched ${i}`, sim_duration_ms: generationMs } }, `req_${i}` as RequestIdOf)))
      }
    }))

    const doomed = await startWorker()
    // Killed once every generation is started and its handle saved: all of them wait on the watch list.
    expect(await waitFor(async () => (await count(db, "provider_handle IS NOT NULL")) === n, generationMs)).toBe(true)
    const watched = await count(db, "status = 'processing' AND provider_handle IS NOT NULL")
    await doomed.stop("SIGKILL")
    expect(watched).toBeGreaterThan(n * 0.9)
    const killedAt = Date.now()

    await startWorker()
    expect(await settle(db, generationMs * 2 + 120_000)).toBe(true)
    const failures = await db.query<{ error: string; n: string }>(
      "SELECT error, COUNT(*) AS n FROM genjobs_jobs WHERE status <> 'completed' GROUP BY error"
    )
    expect(failures).toEqual([])
    expect(await count(db, "status = 'completed'")).toBe(n)
    expect(await count(db, "provider_starts > 1")).toBe(0)
    expect(sim.counters.starts).toBe(n)
    for (let i = 0; i < n; i++) expect(sim.counters.startsByMarker.get(`watched ${i}`) ?? 0).toBe(1)
    console.log(
      `[fault] watch list crash: ${watched} of ${n} generations watched at the SIGKILL; all ${n} completed ` +
        `${Date.now() - killedAt} ms after it (lease ${LEASE_MS} ms, generations of ${generationMs} ms); ${sim.counters.starts} starts (1 per job)`
    )
  } finally {
    await Promise.all(workers.map((w) => w.stop("SIGKILL")))
    await submitter.dispose()
    await sim.close()
  }
}
