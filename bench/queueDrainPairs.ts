/**
 * queue_drain's engine side, two builds or settings side by side (a measuring aid, not a
 * figure): submits BENCH_DRAIN_JOBS once into a template database, then for BENCH_PAIRS_ROUNDS
 * rounds drains a fresh copy of it (CREATE DATABASE ... TEMPLATE) with side A then side B, each
 * as queue_drain does (BENCH_DRAIN_PROCESSES x BENCH_DRAIN_CONCURRENCY, started on `go`, the
 * clock stopped when the database shows every job done, polled every 20 ms). A side is this
 * checkout's worker or another's (BENCH_PAIRS_A_DIR / BENCH_PAIRS_B_DIR, a checkout root), with
 * extra environment (BENCH_PAIRS_A_ENV / BENCH_PAIRS_B_ENV, JSON). Prints one JSON line per
 * drain: seconds, jobs/s and the worker processes' CPU per job (from /proc, start-up included,
 * as queueDrainCost.ts counts it). Run: `npx tsx --conditions=genjobs-source bench/queueDrainPairs.ts`.
 */
import { type ChildProcess, fork } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { processCpuMs } from "./lib/cpu.js"
import { childExecArgv, goAll, readyAll, stopAll } from "./lib/child.js"
import { seed, submitMany } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { connect, waitFor, withDatabase } from "./lib/pg.js"
import { engineDrained, startDrainEngine } from "./queueDrain.js"

const n = settings.drainJobs
const rounds = Number(process.env.BENCH_PAIRS_ROUNDS ?? 3)
const here = fileURLToPath(new URL("..", import.meta.url))
const side = (name: "A" | "B") => ({
  name,
  dir: process.env[`BENCH_PAIRS_${name}_DIR`] ?? here,
  env: JSON.parse(process.env[`BENCH_PAIRS_${name}_ENV`] ?? "{}") as Record<string, string>
})
const sides = [side("A"), side("B")]

const drainOnce = async (template: string, s: ReturnType<typeof side>, round: number) => {
  const admin = await connect("postgres")
  const name = `${template}_r${round}${s.name.toLowerCase()}`
  await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`)
  try {
    const url = `${settings.pgUrl}/${name}`
    const client = await connect(name)
    const children: Array<ChildProcess> = Array.from({ length: settings.drainProcesses }, () =>
      fork(`${s.dir}/bench/queueDrainWorker.ts`, [], {
        execArgv: childExecArgv(),
        cwd: s.dir,
        env: { ...process.env, ...s.env, BENCH_DATABASE_URL: url, BENCH_CONCURRENCY: String(settings.drainConcurrency) },
        stdio: ["ignore", "inherit", "inherit", "ipc"]
      }))
    try {
      await readyAll(children)
      const c0 = children.map((c) => processCpuMs(c.pid!))
      const start = performance.now()
      await goAll(children)
      await waitFor("drain", () => engineDrained(client), 20, 600_000)
      const seconds = (performance.now() - start) / 1000
      const workerMs = children.reduce((sum, c, i) => sum + processCpuMs(c.pid!) - c0[i]!, 0)
      const load = readFileSync("/proc/loadavg", "utf8").split(" ")[0]
      console.log(JSON.stringify({
        round, side: s.name, jobs: n, seconds: Math.round(seconds * 1000) / 1000, jobsPerSecond: Math.round(n / seconds),
        workerCpuMsPerJob: Math.round((workerMs / n) * 1000) / 1000, load
      }))
    } finally {
      await stopAll(children)
      await client.end()
    }
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  }
}

await withDatabase("pairs", async (url, template) => {
  const engine = await startDrainEngine(url, 0, { kind: "store" })
  try {
    await submitMany(engine, await seed(engine, settings.drainAccounts), n, 16)
  } finally {
    await engine.dispose()
  }
  // A template must have no connection open while it is copied.
  const admin = await connect("postgres")
  try {
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [template])
  } finally {
    await admin.end()
  }
  for (let round = 1; round <= rounds; round++) {
    for (const s of round % 2 === 1 ? sides : [...sides].reverse()) await drainOnce(template, s, round)
  }
})
