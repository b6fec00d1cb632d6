/**
 * fairness_*: issue 37's measure of fair shares, on the memory, SQLite and PostgreSQL stores (the
 * store's own queue). One in-process engine with BENCH_FAIR_WORKERS workers; its provider holds at
 * most 4 generations in flight (the catalog's provider limit) and takes BENCH_FAIR_RUN_MS to make
 * each. Account A submits BENCH_FAIR_A_JOBS jobs; a second after the last, account B submits 10 at once.
 * The provider records each start with its claim time. B's k-th job must start by the (2k)-th
 * start claimed after B's first submit answered (a rank of 0 or less: claimed before that), and
 * A must finish all of its jobs; the figure is B's 10th job's rank beside 20, with every rank,
 * and fails otherwise. CPU: this process's user+system time from A's first submit to the last
 * end (submits, claims, starts, ends, and the store's own work for memory and SQLite;
 * PostgreSQL's server is not counted) per job.
 */
import { Effect, Layer, Redacted, References } from "effect"
import { Catalog, type GenerationProvider, makeEngine, type StorePorts } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { postgresStore } from "genjobs/postgres"
import { sqliteStore } from "genjobs/sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { benchCatalog } from "./catalog.js"
import { BENCH_PROVIDER, seed, submit, submitMany, TABLE_PREFIX } from "./lib/engine.js"
import { waitFor, withDatabase } from "./lib/pg.js"
import { emit, log } from "./lib/report.js"

const whole = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive whole number`)
  return value
}
const A_JOBS = whole("BENCH_FAIR_A_JOBS", 5_000)
const B_JOBS = 10
const RUN_MS = whole("BENCH_FAIR_RUN_MS", 10)
const WORKERS = whole("BENCH_FAIR_WORKERS", 8)
const MAX_IN_FLIGHT = 4
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A provider that records its starts in order and finishes each generation RUN_MS later. */
interface Start {
  readonly account: string
  readonly job: string
  /** When the job was claimed: its place in flight taken. */
  readonly claimedAt: number
}

const recordingProvider = (starts: Array<Start>, ended: Map<string, number>): GenerationProvider => ({
  start: (request) =>
    Effect.sync(() => starts.push({ account: request.job.accountId, job: request.job.id, claimedAt: request.job.startedAt ?? 0 })).pipe(
      Effect.andThen(Effect.sleep(RUN_MS)),
      Effect.andThen(Effect.sync(() => ended.set(request.job.accountId, (ended.get(request.job.accountId) ?? 0) + 1))),
      Effect.as({ _tag: "Finished", status: { _tag: "Succeeded", outputs: [] } } as const)
    ),
  poll: () => Effect.die("the recording provider finishes in its start"),
  cancel: () => Effect.void
})

const run = async (store: string, layer: Layer.Layer<StorePorts, unknown>) => {
  const starts: Array<Start> = []
  const ended = new Map<string, number>()
  const engine = await makeEngine({
    store: layer,
    files: memoryFiles({ publicUrl: "http://bench.invalid" }),
    providers: { [BENCH_PROVIDER]: recordingProvider(starts, ended) },
    workers: WORKERS,
    webhookDispatchers: 0,
    uploadSweeper: false,
    observability: Layer.succeed(References.MinimumLogLevel, "Warn")
  })
  try {
    const [a, b] = await seed(engine, 2)
    const catalog = benchCatalog(BENCH_PROVIDER)
    await engine.run(Effect.flatMap(Catalog, (c) =>
      c.replace({ ...catalog, providers: catalog.providers.map((p) => ({ ...p, limits: { maxInFlight: MAX_IN_FLIGHT } })) })))
    log(`fairness_${store}: A submits ${A_JOBS} jobs of ${RUN_MS} ms, ${MAX_IN_FLIGHT} in flight at most`)
    const cpuBefore = process.cpuUsage()
    const drainStart = performance.now()
    await submitMany(engine, [a!], A_JOBS, 4)
    await sleep(1_000)
    // B submits its 10 at once, and its submit is done when they are stored. A start counts from
    // its claim, when the job takes its place in flight (the job's startedAt): jobs claimed before
    // B's submit answered were chosen before B's jobs could be, even when they reach the provider
    // after. B's k-th job is the k-th of them to start.
    const before = starts.length
    const bIds = await Promise.all(Array.from({ length: B_JOBS }, async (_, k) => (await submit(engine, b!, `b${k}`)).job.id))
    const bAt = Date.now()
    const total = A_JOBS + B_JOBS
    await waitFor(`all ${total} jobs to end`, async () => [...ended.values()].reduce((n, c) => n + c, 0) >= total, 50, 10 * 60_000)
    const seconds = (performance.now() - drainStart) / 1000
    const cpu = process.cpuUsage(cpuBefore)
    const byClaim = starts.map((s, at) => ({ ...s, at })).sort((x, y) => x.claimedAt - y.claimedAt || x.at - y.at)
    const mark = byClaim.findIndex((s) => s.claimedAt >= bAt)
    const ranks = bIds.map((id) => byClaim.findIndex((s) => s.job === id) - mark + 1).sort((x, y) => x - y)
    const aFinished = ended.get(a!.account.id) ?? 0
    const held = ranks.every((rank, k) => rank <= 2 * (k + 1))
    emit({
      figure: `fairness_${store}`,
      engine: ranks.at(-1)!,
      reference: 2 * B_JOBS,
      unit: "starts",
      better: "lower",
      referenceIs: `issue 37's bound: B's k-th job starts by the (2k)-th start after B's submit (k = ${B_JOBS})`,
      target: "<= 1 for every k",
      params: {
        bStartRanks: ranks,
        bound: ranks.map((_, k) => 2 * (k + 1)),
        aJobs: A_JOBS,
        aFinished,
        startsBeforeB: before,
        claimedBeforeBAnswered: mark,
        maxInFlight: MAX_IN_FLIGHT,
        runMs: RUN_MS,
        workers: WORKERS,
        drainSeconds: Math.round(seconds * 10) / 10,
        cpuMicrosPerJob: Math.round((cpu.user + cpu.system) / starts.length),
        via: "Jobs.submit and the engine's own workers in one process, the store's own queue"
      }
    })
    if (!held) throw new Error(`fairness_${store}: B's start ranks ${ranks.join(", ")} pass 2k`)
    if (aFinished !== A_JOBS) throw new Error(`fairness_${store}: A finished ${aFinished} of ${A_JOBS}`)
  } finally {
    await engine.dispose()
  }
}

export const fairness = async () => {
  await run("memory", memoryStore())
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-"))
  try {
    await run("sqlite", sqliteStore({ filename: join(dir, "bench.db") }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  await withDatabase("fairness", (url) => run("postgres", postgresStore({ url: Redacted.make(url), tablePrefix: TABLE_PREFIX })))
}
