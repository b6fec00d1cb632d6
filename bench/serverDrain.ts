/**
 * server_drain: N jobs drained by the bundled server (`node dist/apps/server/main.js`, as shipped:
 * its logs, the demo provider, output files on disk, job events), P server processes with
 * WORKER_CONCURRENCY=C each (default 2 x 24) on one fresh PostgreSQL database, jobs/s, beside
 * graphile-worker batched in the same run (queue_drain's reference: P processes of concurrency C, a
 * no-op task). queue_drain times the queue with a provider that makes nothing; this figure adds
 * what every real job costs outside the claim, so the gap between the two is that cost.
 *
 * The jobs are the bench catalog's text model on the demo provider (`demo/text`: the demo's
 * text-to-text generation, without the demo catalog's rate limits), each writing one text file
 * under the server's DATA_DIR. They are submitted over HTTP (8 accounts, BENCH_HTTP_CONNECTIONS
 * connections) to an API-only server (WORKER_CONCURRENCY=0), stopped before the workers start.
 * The worker servers start with the pending jobs held back by row locks (their claims skip locked
 * rows), so the clock leaves out Node's start-up, the server's own (migrations check, catalog
 * import) and the listen; once every server answers /health the clock starts, the locks are
 * released and a `NOTIFY` on the jobs channel wakes each server's claimer at once (it would
 * otherwise find the jobs at its next poll, up to a second later). The clock stops when the
 * database shows every job completed, polled every 20 ms as in queue_drain. In params: the CPU
 * each job cost over the drain, in µs (from /proc), in the servers together and in the PostgreSQL
 * backends of the drain's database.
 */
import { readFileSync } from "node:fs"
import { availableParallelism } from "node:os"
import type pg from "pg"
import { benchModel } from "./catalog.js"
import { TABLE_PREFIX } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { submitLoad } from "./lib/load.js"
import { connect, waitFor, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import { makeAccounts, type RunningServer, startBundledServer } from "./lib/server.js"
import { graphileConfigLabel } from "./graphile.js"
import { engineDrained, graphileSide } from "./queueDrain.js"

const POLL_MS = 20

const count = async (client: pg.Client, where: string) =>
  Number((await client.query(`SELECT count(*) AS n FROM ${TABLE_PREFIX}jobs WHERE ${where}`)).rows[0].n)

/** User + system CPU of a process in ms, from /proc (Linux; 100 ticks a second); 0 for one gone. */
const processCpuMs = (pid: number): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return 0
  }
}

/**
 * Starts counting the CPU of the PostgreSQL backends serving database `name` (the servers' pools,
 * this bench's connection), not the whole machine's: others' tests come and go on a shared one.
 * The returned function answers the ms they used since (a backend that ended meanwhile is lost).
 */
const databaseCpu = async (client: pg.Client, name: string) => {
  const backends = async () =>
    (await client.query("SELECT pid FROM pg_stat_activity WHERE datname = $1", [name])).rows.map((r: { pid: number }) => r.pid)
  const before = new Map((await backends()).map((pid) => [pid, processCpuMs(pid)]))
  return async () => (await backends()).reduce((sum, pid) => sum + processCpuMs(pid) - (before.get(pid) ?? 0), 0)
}

const stopAll = (servers: ReadonlyArray<RunningServer>) => Promise.all(servers.map((server) => server.stop()))

const engineSide = (n: number) =>
  withDatabase("server_drain", async (url, name) => {
    const client = await connect(name)
    try {
      log(`server_drain: submitting ${n} jobs over HTTP to an API-only server`)
      const api = await startBundledServer({ DATABASE_URL: url, WORKER_CONCURRENCY: "0" })
      let submitSeconds: number
      try {
        const keys = await makeAccounts(api.url, 8)
        const submitStart = performance.now()
        await submitLoad({ url: api.url, keys, model: benchModel("demo"), connections: settings.httpConnections, amount: n, label: "server_drain submit" })
        submitSeconds = (performance.now() - submitStart) / 1000
      } finally {
        await api.stop()
      }
      const pending = await count(client, "status = 'pending'")
      if (pending !== n) throw new Error(`server_drain: ${pending} pending jobs after ${n} submits`)

      // Row locks keep the pending jobs from the workers' claims (SKIP LOCKED) while they start.
      await client.query("BEGIN")
      await client.query(`SELECT id FROM ${TABLE_PREFIX}jobs WHERE status = 'pending' FOR UPDATE`)
      log(`server_drain: starting ${settings.drainProcesses} servers with WORKER_CONCURRENCY=${settings.drainConcurrency}`)
      const servers: Array<RunningServer> = []
      try {
        const started = await Promise.allSettled(
          Array.from({ length: settings.drainProcesses }, () =>
            startBundledServer({ DATABASE_URL: url, WORKER_CONCURRENCY: String(settings.drainConcurrency) }))
        )
        for (const one of started) if (one.status === "fulfilled") servers.push(one.value)
        for (const one of started) if (one.status === "rejected") throw one.reason
        const early = await count(client, "status <> 'pending'")
        if (early !== 0) throw new Error(`server_drain: ${early} jobs left pending before the clock started`)
        const serverCpu = servers.map((server) => [server.pid, processCpuMs(server.pid)] as const)
        const dbCpu = await databaseCpu(client, name)
        const start = performance.now()
        const releasedAt = Date.now()
        await client.query("COMMIT")
        await client.query(`NOTIFY ${TABLE_PREFIX}jobs`)
        await waitFor("the servers to complete every job", () => engineDrained(client), POLL_MS, 600_000)
        const seconds = (performance.now() - start) / 1000
        // µs of CPU per job over the drain: the servers together, and the database's backends.
        const perJob = (ms: number) => Math.round((ms * 1000) / n)
        const cpuUsPerJob = {
          servers: perJob(serverCpu.reduce((sum, [pid, before]) => sum + processCpuMs(pid) - before, 0)),
          database: perJob(await dbCpu())
        }
        const completed = await count(client, "status = 'completed' AND outputs IS NOT NULL")
        if (completed !== n) throw new Error(`server_drain: ${completed} of ${n} jobs completed with their output`)
        const retried = await count(client, "attempts > 1")
        // The wake-up's check: the first job should start within milliseconds of the release, not at a poll.
        const firstStart = Number((await client.query(`SELECT min(started_at) AS t FROM ${TABLE_PREFIX}jobs`)).rows[0].t)
        return { seconds, submitSeconds, retried, cpuUsPerJob, firstStartMs: firstStart - releasedAt }
      } finally {
        await client.query("ROLLBACK").catch(() => undefined)
        await stopAll(servers)
      }
    } finally {
      await client.end()
    }
  })

export const serverDrain = async () => {
  const n = settings.serverDrainJobs
  const engine = await engineSide(n)
  log(`server_drain: graphile-worker batched (${graphileConfigLabel.batched}), ${n} jobs`)
  const reference = await graphileSide(n, "batched")
  emit({
    figure: "server_drain",
    engine: n / engine.seconds,
    reference: n / reference.seconds,
    unit: "jobs/s",
    better: "higher",
    referenceIs: `graphile-worker 0.18 batched (${graphileConfigLabel.batched}), perfTest shape (batched add_jobs, no-op task)`,
    params: {
      jobs: n,
      processes: settings.drainProcesses,
      concurrency: settings.drainConcurrency,
      engine: "bundled server on PostgreSQL (its own queue), WORKER_CONCURRENCY per process, demo provider writing one text file per job, logs at its default level",
      model: benchModel("demo"),
      engineInsert: `POST /v1/jobs/submit to an API-only server, 8 accounts, ${settings.httpConnections} connections, before the clock`,
      engineInsertJobsPerSecond: Math.round(n / engine.submitSeconds),
      referenceInsert: "add_jobs, 1000 per call, before the clock",
      referenceInsertJobsPerSecond: Math.round(n / reference.insertSeconds),
      engineSeconds: Math.round(engine.seconds * 1000) / 1000,
      referenceSeconds: Math.round(reference.seconds * 1000) / 1000,
      engineFirstStartAfterReleaseMs: engine.firstStartMs,
      engineJobsClaimedMoreThanOnce: engine.retried,
      engineCpuUsPerJob: engine.cpuUsPerJob,
      cores: availableParallelism()
    }
  })
}
