/**
 * server_rss: resident memory of the bundled server on PostgreSQL (BENCH_RSS_WORKERS in-process
 * workers, the demo provider) idle after start, then idle again after BENCH_RSS_JOBS jobs were
 * submitted through its HTTP API (8 accounts, 32 connections) and completed by its workers. The
 * reference is its own idle RSS before the jobs, so the ratio is the growth; the peak is in params.
 */
import { benchModel } from "./catalog.js"
import { settings } from "./lib/env.js"
import { submitLoad } from "./lib/load.js"
import { connect, waitFor, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import { makeAccounts, rssMiB, startBundledServer } from "./lib/server.js"

const IDLE_MS = 5_000

const sleep = (msecs: number) => new Promise((resolve) => setTimeout(resolve, msecs))

export const serverRss = () =>
  withDatabase("rss", async (url, name) => {
    const jobs = settings.rssJobs
    const server = await startBundledServer({ DATABASE_URL: url, WORKER_CONCURRENCY: String(settings.rssWorkers) })
    const client = await connect(name)
    try {
      const keys = await makeAccounts(server.url, 8)
      await sleep(IDLE_MS)
      const before = rssMiB(server.pid)
      let peak = before
      const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(server.pid))), 1_000)
      const start = performance.now()
      try {
        log(`server_rss: submitting ${jobs} jobs while ${settings.rssWorkers} workers run them`)
        await submitLoad({ url: server.url, keys, model: benchModel("demo"), connections: settings.httpConnections, amount: jobs, label: "server_rss submit" })
        const submitSeconds = (performance.now() - start) / 1000
        const count = async (where: string) => Number((await client.query(`SELECT count(*) AS n FROM genjobs_jobs WHERE ${where}`)).rows[0].n)
        await waitFor("the server's workers to finish", async () => (await count("status IN ('pending', 'processing')")) === 0, 1_000, 3_600_000)
        const drainSeconds = (performance.now() - start) / 1000
        const completed = await count("status = 'completed'")
        // The probe-free load has no warm-up, so the table holds exactly the submitted jobs.
        if (completed !== jobs) throw new Error(`server_rss: ${completed} of ${jobs} jobs completed`)
        await sleep(IDLE_MS)
        const after = rssMiB(server.pid)
        emit({
          figure: "server_rss",
          engine: after,
          reference: before,
          unit: "MiB",
          better: "lower",
          referenceIs: "the same server's idle RSS before the jobs",
          params: {
            jobs,
            workers: settings.rssWorkers,
            store: "PostgreSQL",
            peakMiB: peak,
            idleWaitMs: IDLE_MS,
            submitSeconds: Math.round(submitSeconds),
            allCompletedSeconds: Math.round(drainSeconds)
          }
        })
      } finally {
        clearInterval(sampler)
      }
    } finally {
      await client.end()
      await server.stop()
    }
  })
