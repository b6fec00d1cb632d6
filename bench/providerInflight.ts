/**
 * provider_inflight: one worker process (providerInflightWorker.ts, BENCH_INFLIGHT_JOBS worker
 * fibers, the Replicate adapter) holding BENCH_INFLIGHT_JOBS generations of 30 s in flight at once
 * against the Replicate simulator (run in this process), on PostgreSQL, or with
 * BENCH_INFLIGHT_STORE=sqlite on one SQLite file both processes open. The worker's engine starts
 * idle; its RSS then is the reference. The jobs are then submitted through `Jobs.submit` by an
 * engine here with no workers. While every generation is in flight (the simulator has seen them
 * all start and none finish) the worker's RSS peak and CPU are taken from what it reports
 * (`process.memoryUsage()`, `process.cpuUsage()` every 500 ms), and lease renewals that failed
 * are counted (the worker's "could not renew job leases" warnings). The event loop's delay (p99 and longest) is taken from the worker's reports from the
 * release to the last completion. The figure is reported with the jobs that failed (and of them
 * the starts that could not be confirmed), then fails unless the simulator saw them all in flight
 * at once and every job completed.
 *
 * Beside it, the reference for CPU per poll: a bare undici poll loop (providerInflightBare.ts)
 * in a process of its own against a fresh simulator, holding as many predictions on the same
 * interval. Engine CPU per poll is the worker's CPU while every generation is in flight over
 * the polls the simulator answered meanwhile; the bare loop's the same. Polls on time are the
 * polls a second the simulator saw while every generation was in flight, against those asked
 * (generations / interval).
 *
 * The simulator keeps its connections alive BENCH_INFLIGHT_KEEPALIVE_MS (default 5 s, Node's
 * default), so both pollers reuse them as they would a provider's API. 1 s or less makes undici,
 * which closes a connection 2 s before the announced end, open a connection per request:
 * BENCH_INFLIGHT_KEEPALIVE_MS=1000 measures that, as this figure did until 2026-11-29.
 *
 * BENCH_INFLIGHT_PROFILE_DIR=<dir> writes a CPU profile of the worker over the hold alone
 * (hold-<pid>.cpuprofile; `npx tsx bench/cpuProfileModules.ts <file>` groups it by module).
 * BENCH_INFLIGHT_HEAP_DIR=<dir> writes a heap snapshot of the worker once every generation is in
 * flight (hold-<pid>.heapsnapshot, for Chrome's memory panel); the worker stops for it a few seconds,
 * so its figures are not read from that run (nor a profile taken in the same one).
 * BENCH_INFLIGHT_ALLOC_DIR=<dir> writes V8's allocation samples of the worker, the start burst's
 * and the burst's with the hold's (burst-<pid>.heapprofile, all-<pid>.heapprofile), with
 * BENCH_INFLIGHT_ALLOC_PROMOTED=1 only what reached the old generation (providerInflightWorker.ts);
 * the sampling costs CPU, so its figures are not read from that run either.
 * BENCH_INFLIGHT_MAPS=1 has the worker break its RSS down by kind of mapping (V8's spaces, malloc's
 * arenas, other anonymous memory, mapped files: providerInflightWorker.ts) in every report, so the
 * peak's and the start burst's parts are in params (reading /proc/self/smaps costs the worker a
 * little CPU each time). BENCH_INFLIGHT_SERIES=<file> writes every report of the worker with the
 * release's and the last start's times, as JSON.
 */
import { type ChildProcess, fork } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"
import { startReplicateSimulator } from "../test/simulators/replicate.js"
import { childExecArgv, exited, goAll, readyAll } from "./lib/child.js"
import { Redacted } from "effect"
import { postgresStore } from "genjobs/postgres"
import { sqliteStore } from "genjobs/sqlite"
import { benchEngine, seed, submitMany, TABLE_PREFIX } from "./lib/engine.js"
import { connect, waitFor, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"
import type { BareCounts } from "./providerInflightBare.js"
import type { InflightCounts } from "./providerInflightWorker.js"

const whole = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive whole number`)
  return value
}
/** Generations one worker process holds in flight at once (BENCH_INFLIGHT_JOBS), and the wait between polls of each (the engine's default 5 s). */
const settings = { inflightJobs: whole("BENCH_INFLIGHT_JOBS", 5_000), inflightPollMs: whole("BENCH_INFLIGHT_POLL_MS", 5_000) }
/** The store of the submitter and the worker: PostgreSQL (default) or one SQLite file both open (BENCH_INFLIGHT_STORE=sqlite). */
const STORE = process.env.BENCH_INFLIGHT_STORE === "sqlite" ? "sqlite" : "pg"
/**
 * Whether to measure the bare undici reference after the engine (BENCH_INFLIGHT_BARE=0: not).
 * It depends on neither the store nor the build: runs side by side need it once.
 */
const BARE = process.env.BENCH_INFLIGHT_BARE !== "0"
/** How long the simulator holds each generation (BENCH_INFLIGHT_GENERATION_MS, default 30 s). */
const GENERATION_MS = whole("BENCH_INFLIGHT_GENERATION_MS", 30_000)
/** The keep-alive the simulator announces and keeps (BENCH_INFLIGHT_KEEPALIVE_MS, default 5 s; see the header). */
const KEEPALIVE_MS = whole("BENCH_INFLIGHT_KEEPALIVE_MS", 5_000)
/**
 * BENCH_INFLIGHT_STOP_IN_HOLD=1: the worker is stopped once the first generation ended (the
 * others in flight) and its shutdown timed (`shutdownSeconds`); the jobs are not waited for.
 */
const STOP_IN_HOLD = process.env.BENCH_INFLIGHT_STOP_IN_HOLD === "1"
/** Whether the worker writes a CPU profile of the hold (BENCH_INFLIGHT_PROFILE_DIR, see the header). */
const PROFILE = process.env.BENCH_INFLIGHT_PROFILE_DIR !== undefined
/** Whether the worker writes a heap snapshot as the hold starts (BENCH_INFLIGHT_HEAP_DIR, see the header). */
const HEAP_SNAPSHOT = process.env.BENCH_INFLIGHT_HEAP_DIR !== undefined
/** Whether the worker samples its allocations (BENCH_INFLIGHT_ALLOC_DIR, see the header). */
const ALLOC = process.env.BENCH_INFLIGHT_ALLOC_DIR !== undefined
const IDLE_MS = 3_000
const MiB = (bytes: number) => Math.round(bytes / (1024 * 1024))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The bare undici poll loop (providerInflightBare.ts) holding `jobs` predictions of a fresh
 * simulator: its CPU per poll and polls a second while every prediction is in flight.
 */
const bareReference = async (jobs: number) => {
  const sim = await startReplicateSimulator({ durationMs: GENERATION_MS, keepAliveMs: KEEPALIVE_MS })
  const child = fork(fileURLToPath(new URL("providerInflightBare.ts", import.meta.url)), [], {
    execArgv: childExecArgv(),
    env: { ...process.env, BENCH_SIM_URL: sim.url, BENCH_SIM_TOKEN: sim.apiToken, BENCH_CONCURRENCY: String(jobs), BENCH_POLL_MS: String(settings.inflightPollMs) },
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  try {
    const reports: Array<BareCounts & { readonly at: number; readonly simPolls: number }> = []
    child.on("message", (message: BareCounts) => {
      if (message.type === "bare") reports.push({ ...message, at: performance.now(), simPolls: sim.counters.polls })
    })
    await readyAll([child])
    await goAll([child])
    log(`provider_inflight: the bare undici reference, ${jobs} predictions`)
    await waitFor("every bare prediction to be created", async () => (reports.at(-1)?.created ?? 0) >= jobs, 200, 5 * 60_000)
    const from = reports.length
    await waitFor("the first bare prediction to end", async () => sim.counters.inFlight < jobs, 200, GENERATION_MS + 60_000)
    const hold = reports.slice(from)
    const first = reports[from - 1]!
    const last = reports.at(-1)!
    await waitFor("every bare prediction to end", async () => (reports.at(-1)?.ended ?? 0) >= jobs, 500, GENERATION_MS * 4 + 60_000)
    const polls = last.simPolls - first.simPolls
    return {
      cpuPerPoll: (last.cpuMicros - first.cpuMicros) / Math.max(1, polls),
      pollsPerSecond: polls / ((last.at - first.at) / 1000),
      rss: Math.max(...hold.map((r) => r.rss)),
      loopDelayP99Ms: Math.round(Math.max(0, ...hold.map((r) => r.loopDelayP99Ms)))
    }
  } finally {
    await exited(child, () => child.send({ type: "stop" }))
    await sim.close()
  }
}

/**
 * The store both processes use, and the parent's own handle on it: the worker's environment,
 * holding the pending jobs back from the worker's claims while its idle RSS is taken (PostgreSQL:
 * row locks, which its claims skip; SQLite, where a lock would stall the worker's every
 * statement: a status no claim looks for, set back on release), and a count of jobs.
 */
interface BenchStore {
  readonly name: string
  readonly layer: ReturnType<typeof postgresStore> | ReturnType<typeof sqliteStore>
  readonly workerEnv: Record<string, string>
  readonly hold: () => Promise<void>
  readonly release: () => Promise<void>
  readonly count: (where: string) => Promise<number>
  readonly close: () => Promise<void>
}

const pgStore = async (url: string, name: string): Promise<BenchStore> => {
  const client = await connect(name)
  return {
    name: "PostgreSQL",
    layer: postgresStore({ url: Redacted.make(url), tablePrefix: TABLE_PREFIX }),
    workerEnv: { BENCH_DATABASE_URL: url },
    hold: async () => {
      await client.query("BEGIN")
      await client.query(`SELECT id FROM ${TABLE_PREFIX}jobs WHERE status = 'pending' FOR UPDATE`)
    },
    release: async () => void (await client.query("COMMIT")),
    count: async (where) => Number((await client.query(`SELECT count(*) AS n FROM ${TABLE_PREFIX}jobs WHERE ${where}`)).rows[0].n),
    close: () => client.end()
  }
}

const HELD = "bench_held"

const sqliteBenchStore = (dir: string): BenchStore => {
  const filename = join(dir, "inflight.db")
  let db: DatabaseSync | undefined
  // Opened once the submitter has made the file and its tables; waits out the worker's writes.
  const open = () => (db ??= new DatabaseSync(filename, { timeout: 60_000 }))
  return {
    name: "SQLite",
    layer: sqliteStore({ filename, tablePrefix: TABLE_PREFIX }),
    workerEnv: { BENCH_SQLITE_FILE: filename },
    hold: async () => void open().prepare(`UPDATE ${TABLE_PREFIX}jobs SET status = '${HELD}' WHERE status = 'pending'`).run(),
    release: async () => void open().prepare(`UPDATE ${TABLE_PREFIX}jobs SET status = 'pending' WHERE status = '${HELD}'`).run(),
    count: async (where) => Number((open().prepare(`SELECT count(*) AS n FROM ${TABLE_PREFIX}jobs WHERE ${where}`).get() as { n: number }).n),
    close: async () => db?.close()
  }
}

/** Runs `body` on a fresh store of the kind BENCH_INFLIGHT_STORE asks, dropped afterwards. */
const withStore = <A>(body: (store: BenchStore) => Promise<A>): Promise<A> => {
  if (STORE === "pg") {
    return withDatabase("provider_inflight", async (url, name) => {
      const store = await pgStore(url, name)
      try {
        return await body(store)
      } finally {
        await store.close()
      }
    })
  }
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-inflight-"))
  const store = sqliteBenchStore(dir)
  return body(store).finally(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
}

export const providerInflight = () =>
  withStore(async (store) => {
    const jobs = settings.inflightJobs
    const sim = await startReplicateSimulator({ durationMs: GENERATION_MS, keepAliveMs: KEEPALIVE_MS })
    let child: ChildProcess | undefined
    try {
      // The schema, the catalog and a funded account, made by an engine with no workers (and no
      // log line per submit: stdout carries the figures).
      const submitter = await benchEngine(store.layer, { workers: 0 })
      const [caller] = await seed(submitter, 1)
      log(`provider_inflight: submitting ${jobs} jobs of ${GENERATION_MS / 1000} s`)
      const submitStart = performance.now()
      await submitMany(submitter, [caller!], jobs, 16)
      const submitSeconds = (performance.now() - submitStart) / 1000
      // The pending jobs are kept from the worker's claims while its idle RSS is taken; on
      // release it claims them all in one go, as a worker finding a backlog does.
      await store.hold()
      // As forkTs, but its log lines go to stderr (stdout carries the figures), counted.
      child = fork(fileURLToPath(new URL("providerInflightWorker.ts", import.meta.url)), [], {
        execArgv: childExecArgv(),
        env: {
          ...process.env,
          ...store.workerEnv,
          BENCH_SIM_URL: sim.url,
          BENCH_SIM_TOKEN: sim.apiToken,
          BENCH_CONCURRENCY: String(jobs),
          BENCH_POLL_MS: String(settings.inflightPollMs)
        },
        stdio: ["ignore", "pipe", "inherit", "ipc"]
      })
      child.once("exit", (code, signal) => log(`provider_inflight: the worker exited (code ${code}, signal ${signal})`))
      let failedRenewals = 0
      child.stdout!.on("data", (chunk: Buffer) => {
        process.stderr.write(chunk)
        failedRenewals += String(chunk).split("could not renew job leases").length - 1
      })
      const reports: Array<InflightCounts & { readonly at: number; readonly simPolls: number }> = []
      child.on("message", (message: InflightCounts) => {
        if (message.type === "counts") reports.push({ ...message, at: performance.now(), simPolls: sim.counters.polls })
      })
      await readyAll([child])
      await goAll([child])
      await sleep(IDLE_MS)
      const idle = reports.at(-1)!
      if (sim.counters.starts !== 0) throw new Error("provider_inflight: the worker started generations before the jobs were released")
      await store.release()

      const releasedAt = performance.now()
      const progress = setInterval(() => log(`provider_inflight: ${sim.counters.starts} started, ${sim.counters.inFlight} in flight`), 5_000)
      try {
        await waitFor("every generation to start", async () => sim.counters.starts >= jobs, 200, 5 * 60_000)
      } finally {
        clearInterval(progress)
      }
      const allStartedAt = performance.now()
      const holdFrom = reports.length
      if (PROFILE || HEAP_SNAPSHOT || ALLOC) child.kill("SIGUSR2")
      await waitFor("the first generation to end", async () => sim.counters.inFlight < jobs, 200, GENERATION_MS + 60_000)
      if (PROFILE || HEAP_SNAPSHOT || ALLOC) child.kill("SIGUSR2")
      const hold = reports.slice(holdFrom)
      const holdTo = reports.at(-1)!
      const holdStart = reports[holdFrom - 1]!
      const count = store.count
      // Stopped in the hold: how long the worker's shutdown takes with its generations in flight.
      let shutdown: { readonly seconds: number; readonly inFlight: number } | undefined
      if (STOP_IN_HOLD) {
        const inFlight = sim.counters.inFlight
        const asked = performance.now()
        await exited(child, () => child!.send({ type: "stop" }), 5 * 60_000)
        shutdown = { seconds: Math.round((performance.now() - asked) / 100) / 10, inFlight }
        log(`provider_inflight: the worker stopped ${shutdown.seconds} s after it was asked, with ${inFlight} generations in flight`)
      } else {
        await waitFor("every job to complete", async () => (await count("status IN ('pending', 'processing')")) === 0, 1_000, 10 * 60_000)
      }
      const done = reports.at(-1)!
      const completed = await count("status = 'completed'")
      const failed = await count("status = 'failed'")
      const unconfirmed = await count("error LIKE '%could not be confirmed%'")
      await submitter.dispose()
      const released = reports.filter((r) => r.at >= releasedAt)
      const check = () => {
        if (sim.counters.maxInFlight !== jobs) throw new Error(`provider_inflight: at most ${sim.counters.maxInFlight} of ${jobs} generations were in flight at once`)
        if (completed !== jobs && !STOP_IN_HOLD) throw new Error(`provider_inflight: ${completed} of ${jobs} jobs completed (${failed} failed, ${unconfirmed} of them unconfirmed starts)`)
        if (sim.counters.starts !== jobs) throw new Error(`provider_inflight: ${sim.counters.starts} starts for ${jobs} jobs`)
        if (hold.length === 0) throw new Error("provider_inflight: no report while every generation was in flight")
      }

      // The figures of a run that lost jobs are reported too: how many, and how the loop fared.
      const lost = (completed !== jobs && !STOP_IN_HOLD) || sim.counters.starts !== jobs || hold.length === 0
      if (lost) log(`provider_inflight: ${failed} failed (${unconfirmed} unconfirmed starts), ${sim.counters.starts} starts, at most ${sim.counters.maxInFlight} in flight; loop delay p99 ${Math.max(0, ...released.map((r) => r.loopDelayP99Ms))} ms, longest ${Math.max(0, ...released.map((r) => r.loopDelayMaxMs))} ms`)
      check()
      const holdSeconds = (holdTo.at - holdStart.at) / 1000
      const holdPolls = holdTo.simPolls - holdStart.simPolls
      const engineCpuPerPoll = (holdTo.cpuMicros - holdStart.cpuMicros) / Math.max(1, holdPolls)
      const askedPerSecond = jobs / (settings.inflightPollMs / 1000)
      // A reference that could not be measured leaves the engine's figures standing, without it.
      const unmeasured = { cpuPerPoll: Number.NaN, pollsPerSecond: Number.NaN, rss: Number.NaN, loopDelayP99Ms: Number.NaN }
      const bare = !BARE ? unmeasured : await bareReference(jobs).catch((error: unknown) => {
        log(`provider_inflight: the bare reference failed: ${String(error)}`)
        return unmeasured
      })
      // BENCH_INFLIGHT_SERIES=<file>: every report of the worker, with the phases' times, as JSON.
      const series = process.env.BENCH_INFLIGHT_SERIES
      if (series !== undefined) writeFileSync(series, JSON.stringify({ releasedAt, allStartedAt, reports }))
      const inFlightSeconds = (done.at - idle.at) / 1000
      const peak = hold.reduce((a, b) => (b.rss > a.rss ? b : a))
      const parts = (r: InflightCounts) => ({
        heapUsed: MiB(r.heapUsed),
        heapTotal: MiB(r.heapTotal),
        external: MiB(r.external),
        ...(r.maps === undefined ? {} : { maps: Object.fromEntries(Object.entries(r.maps).map(([k, v]) => [k, k.endsWith("Count") ? v : MiB(v)])) })
      })
      // The start burst (release to the last start) against the hold: which phase peaks.
      const burst = reports.filter((r) => r.at >= releasedAt && r.at <= allStartedAt)
      const burstPeak = burst.length === 0 ? undefined : burst.reduce((a, b) => (b.rss > a.rss ? b : a))
      emit({
        figure: "provider_inflight_rss",
        engine: MiB(peak.rss),
        reference: MiB(idle.rss),
        unit: "MiB",
        better: "lower",
        referenceIs: "the same worker process's RSS with its engine started and idle",
        params: {
          inFlight: sim.counters.maxInFlight,
          generationSeconds: GENERATION_MS / 1000,
          store: store.name,
          pollIntervalMs: settings.inflightPollMs,
          simulatorKeepAliveMs: KEEPALIVE_MS,
          // What the RSS is made of at its peak and idle (MiB): V8's heap used, the heap reserved (its young generation grows under load), memory outside it.
          atPeakMiB: parts(peak),
          ...(burstPeak === undefined ? {} : { burstPeakMiB: { rss: MiB(burstPeak.rss), ...parts(burstPeak) } }),
          idleMiB: parts(idle),
          holdSeconds: Math.round(holdSeconds * 10) / 10,
          cpuPercentWhileHolding: Math.round(((holdTo.cpuMicros - holdStart.cpuMicros) / 1e6 / holdSeconds) * 1000) / 10,
          // Renewals that timed out (one lease interval) waiting behind the start burst's writes.
          failedLeaseRenewals: failedRenewals,
          pollsPerSecondAtSimulator: Math.round(sim.counters.polls / inFlightSeconds),
          failedJobs: failed,
          unconfirmedStarts: unconfirmed,
          // The worst half-second's p99, and the longest single delay, from release to the last completion.
          eventLoopDelayP99Ms: Math.round(Math.max(0, ...released.map((r) => r.loopDelayP99Ms))),
          eventLoopDelayMaxMs: Math.round(Math.max(0, ...released.map((r) => r.loopDelayMaxMs))),
          submitSeconds: Math.round(submitSeconds),
          allStartedAfterReleaseSeconds: Math.round((allStartedAt - releasedAt) / 100) / 10,
          firstClaimToAllCompletedSeconds: Math.round(inFlightSeconds),
          ...(shutdown === undefined ? {} : { shutdownSeconds: shutdown.seconds, generationsInFlightAtShutdown: shutdown.inFlight })
        }
      })
      emit({
        figure: "provider_inflight_cpu_per_poll",
        engine: Math.round(engineCpuPerPoll),
        reference: Number.isNaN(bare.cpuPerPoll) ? null : Math.round(bare.cpuPerPoll),
        unit: "µs CPU per poll",
        better: "lower",
        referenceIs: "a bare undici poll loop (one timer per prediction, a keep-alive pool of 64) in its own process against a fresh simulator, as many predictions on the same interval",
        target: "engine <= 100 µs",
        params: { inFlight: jobs, pollIntervalMs: settings.inflightPollMs, enginePollsWhileHolding: holdPolls, bareRssMiB: MiB(bare.rss), bareLoopDelayP99Ms: bare.loopDelayP99Ms }
      })
      emit({
        figure: "provider_inflight_polls_on_time",
        engine: Math.round((holdPolls / holdSeconds) * 10) / 10,
        reference: askedPerSecond,
        unit: "polls/s",
        better: "higher",
        referenceIs: "the polls asked: generations in flight / poll interval",
        target: ">= 0.9x",
        params: { inFlight: jobs, pollIntervalMs: settings.inflightPollMs, barePollsPerSecond: Math.round(bare.pollsPerSecond * 10) / 10 }
      })
    } finally {
      if (child !== undefined) await exited(child, () => child!.send({ type: "stop" }))
      await sim.close()
    }
  })
