/**
 * Issue 34, landing 1: no paid generation lost under load. One engine process holds 10,000
 * generations in flight at the Replicate simulator (run here, in another process, so that it
 * answers while the engine's process is busy); right after its first starts went out, the
 * engine's event loop is held for a few seconds (support/loopStallWorker.ts), longer than a
 * start's request timeout. The answers that came meanwhile must be read, not timed out: no job
 * fails "start could not be confirmed" (a prediction created and paid for, with no job), every
 * job completes, and each was started once. On SQLite and on PostgreSQL.
 */
import { existsSync, rmSync } from "node:fs"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { afterAll, describe, expect, it } from "vitest"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { tempDataDir } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"
import { faultDatabase, type FaultDb } from "./harness.js"
import { startTs, type TsProcess } from "./support/childProcess.js"

const JOBS = 10_000
/** Longer than a start's request timeout: before the fix every start in flight then timed out. */
const STALL_MS = 5_000
const REQUEST_TIMEOUT_MS = 2_000
/** Generations run 20 s at the simulator, polled every 2 s. */
const GENERATION_MS = 20_000

interface Outcome {
  readonly total: number
  readonly completed: number
  readonly unsettled: number
  readonly unconfirmed: number
  readonly errors: ReadonlyArray<string>
}

/** What a store holds of the jobs, read with the store's own SQL. */
const OUTCOME_SQL = `SELECT count(*) AS total,
  sum(CASE WHEN status = 'completed' THEN 1 ELSE 0 END) AS completed,
  sum(CASE WHEN status IN ('pending', 'processing') THEN 1 ELSE 0 END) AS unsettled,
  sum(CASE WHEN error LIKE '%could not be confirmed%' THEN 1 ELSE 0 END) AS unconfirmed
  FROM genjobs_jobs`
const ERRORS_SQL = "SELECT DISTINCT error FROM genjobs_jobs WHERE error IS NOT NULL LIMIT 5"

const outcomeOf = (row: Record<string, unknown>, errors: ReadonlyArray<{ error: unknown }>): Outcome => ({
  total: Number(row["total"]),
  completed: Number(row["completed"] ?? 0),
  unsettled: Number(row["unsettled"] ?? 0),
  unconfirmed: Number(row["unconfirmed"] ?? 0),
  errors: errors.map((e) => String(e.error))
})

const dbs: Array<FaultDb> = []
const dirs: Array<string> = []
afterAll(async () => {
  for (const db of dbs) await db.drop()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Runs the engine process on `store` against a fresh simulator until every job settled; what the store and the simulator saw. */
const runStalled = async (store: string, outcome: () => Promise<Outcome>) => {
  const sim: ReplicateSimulator = await startReplicateSimulator({ durationMs: GENERATION_MS })
  let worker: TsProcess | undefined
  try {
    worker = await startTs("./loopStallWorker.ts", {
      STORE: store,
      REPLICATE_URL: sim.url,
      REPLICATE_TOKEN: sim.apiToken,
      JOBS: String(JOBS),
      STALL_AFTER_STARTS: "500",
      STALL_MS: String(STALL_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      POLL_MS: "2000"
    }, { readyLine: "worker ready", timeoutMs: 120_000 })
    const running = worker
    const settled = await waitFor(async () => {
      if (running.child.exitCode !== null) throw new Error(`the engine process exited:\n${running.output.slice(-4_000)}`)
      await new Promise((r) => setTimeout(r, 500))
      const now = await outcome()
      return now.total === JOBS && now.unsettled === 0
    }, 150_000)
    const stalled = /stalled (\{.*\})/.exec(worker.output)
    const blocks = [...worker.output.matchAll(/blocks (\[.*\])/g)].at(-1)?.[1] ?? "[]"
    return {
      settled,
      sim,
      stalled: stalled === null ? undefined : JSON.parse(stalled[1]!) as { inFlight: number },
      blocks: JSON.parse(blocks) as Array<number>,
      result: await outcome()
    }
  } finally {
    await worker?.stop("SIGKILL")
    await sim.close()
  }
}

const expectNothingLost = (run: Awaited<ReturnType<typeof runStalled>>, label: string) => {
  console.log(
    `[fault] ${label}: ${JOBS} generations, loop held ${STALL_MS} ms with ${run.stalled?.inFlight} starts in flight (request timeout ${REQUEST_TIMEOUT_MS} ms): ` +
      `${run.result.completed} completed, ${run.result.unconfirmed} unconfirmed starts, ${run.sim.counters.starts} starts at the provider, ` +
      `most in flight at once ${run.sim.counters.maxInFlight}; loop blocks over 50 ms besides the stall: ${run.blocks.length} (longest ${Math.max(0, ...run.blocks)} ms)`
  )
  // The stall came while starts were out: the fault was applied.
  expect(run.stalled?.inFlight ?? 0).toBeGreaterThan(0)
  expect(run.result.unconfirmed).toBe(0)
  expect(run.result.errors).toEqual([])
  expect(run.settled).toBe(true)
  expect(run.result.completed).toBe(JOBS)
  // Each job's generation started once: no second start, no start without a job.
  expect(run.sim.counters.starts).toBe(JOBS)
  expect(Math.max(...run.sim.counters.startsByMarker.values())).toBe(1)
}

describe("10,000 generations in flight while the engine's event loop is held longer than a start's timeout", () => {
  it("SQLite: every answer that came during the stall is read; all complete, one start each, none unconfirmed", async () => {
    const dir = tempDataDir()
    dirs.push(dir)
    const file = join(dir, "stall.sqlite")
    const run = await runStalled(`sqlite:${file}`, async () => {
      if (!existsSync(file)) return outcomeOf({ total: 0 }, [])
      const db = new DatabaseSync(file, { readOnly: true })
      try {
        const tables = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'genjobs_jobs'").get() as { n: number }
        if (tables.n === 0) return outcomeOf({ total: 0 }, [])
        return outcomeOf(db.prepare(OUTCOME_SQL).get()!, db.prepare(ERRORS_SQL).all() as Array<{ error: unknown }>)
      } finally {
        db.close()
      }
    })
    expectNothingLost(run, "SQLite loop stall")
  }, 180_000)

  it("PostgreSQL: every answer that came during the stall is read; all complete, one start each, none unconfirmed", async (ctx) => {
    const db = await faultDatabase()
    if (db === undefined) return ctx.skip()
    dbs.push(db)
    const run = await runStalled(`postgres:${db.url}`, async () => {
      const [row] = await db.query(OUTCOME_SQL)
      return outcomeOf(row!, await db.query(ERRORS_SQL))
    })
    expectNothingLost(run, "PostgreSQL loop stall")
  }, 180_000)
})
