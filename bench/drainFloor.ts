/**
 * queue_drain_floor: the engine's own per-job work, with no database and no broker: N jobs drained
 * in this one process by P x C worker fibers (the queue_drain sizes), the memory store, the no-op
 * provider, on the memory store's own queue and on the memory broker (`memoryQueue`, the broker
 * path: deliveries, claims by id, acks). What is left is the engine: the Effect runtime, the job's
 * state machine, its lease, its claim and its settlement. Jobs/s and CPU per job of this process
 * (`process.cpuUsage`, user + system, every thread: V8's compiler and GC threads too), which
 * bounds any queue_drain on one core: a PostgreSQL or Redis drain adds its store's and broker's
 * work to it. No reference: the floor says what the targets leave for the rest.
 *
 * One drain's figure moves with what else the process is doing, so each queue is drained in
 * rounds: a warm-up round first (V8 compiles the hot paths while it runs: that CPU is the first
 * drain's, not a job's), then BENCH_DRAIN_FLOOR_ROUNDS measured rounds (5), each on an engine of
 * its own (N jobs submitted, a full collection, the drain timed), so every round starts from the
 * same heap. The figure is the rounds' median; each round's, its collections' count and pause,
 * are in the params. The engine is the one `genjobs` resolves to (lib/env.ts, `engineFrom`):
 * `dist/` under `npm run bench` (what the package ships), the TypeScript sources through tsx with
 * `--conditions=genjobs-source`; `params.engineFrom` says which.
 *
 * With BENCH_DRAIN_FLOOR_BESIDE=<another checkout, built>, that checkout's `dist/` is drained in
 * the same process, round for round with this one (the order swapped every round): both meet the
 * same load at the same time, which a loaded machine never gives two runs. Its figures and the
 * median of the rounds' ratios (this / beside) are in the params. BENCH_DRAIN_FLOOR_QUEUES=store or
 * =broker drains one queue only.
 */
import { Effect, Exit, type Fiber, Layer, Option, References, Scheduler, Scope } from "effect"
import { writeFile } from "node:fs/promises"
import { Session } from "node:inspector/promises"
import { PerformanceObserver } from "node:perf_hooks"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { type Engine, JobRepo, makeEngine, Worker } from "genjobs"
import { memoryFiles, memoryQueue, memoryStore } from "genjobs/memory"
import { BENCH_PROVIDER, noopProvider, seed, submit } from "./lib/engine.js"
import { engineFrom, settings } from "./lib/env.js"
import { emit, log } from "./lib/report.js"

type JobIdOf = Parameters<JobRepo["Service"]["get"]>[0]

const POLL_MS = 20

const count = (name: string, fallback: number) => {
  const raw = process.env[name]
  const value = raw === undefined || raw === "" ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got ${raw}`)
  return value
}
const rounds = Math.max(1, count("BENCH_DRAIN_FLOOR_ROUNDS", 5))
const warmups = count("BENCH_DRAIN_FLOOR_WARMUP", 1)
/** Which queues to drain, comma-separated: store (the memory store's own), broker (the memory broker). */
const queues = (process.env.BENCH_DRAIN_FLOOR_QUEUES ?? "store,broker").split(",").map((s) => s.trim())

/** What a round builds its engine with: this checkout's entries, or another's built ones. */
interface Build {
  readonly makeEngine: typeof makeEngine
  readonly memoryStore: typeof memoryStore
  readonly memoryQueue: typeof memoryQueue
  readonly memoryFiles: typeof memoryFiles
}
const here: Build = { makeEngine, memoryStore, memoryQueue, memoryFiles }

/** The checkout drained beside this one, if any: its services' keys are the same strings, so this file's tags find them. */
const besideDir = process.env.BENCH_DRAIN_FLOOR_BESIDE
const beside: Build | undefined = besideDir === undefined || besideDir === "" ? undefined : {
  makeEngine: (await import(pathToFileURL(resolve(besideDir, "dist/entries/index.js")).href)).makeEngine,
  ...(await import(pathToFileURL(resolve(besideDir, "dist/entries/memory.js")).href))
}

// A full collection before each timed drain, so a round does not pay the garbage of the submits
// (or of the round before); V8's flag set at run time gives the function without `--expose-gc`.
setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

/**
 * The process's garbage collections (pauses on the main thread), kept to be counted by the time
 * they started: the observer hears of them later, the forced collection before a drain among them.
 */
const collections: Array<{ readonly start: number; readonly major: boolean; readonly ms: number }> = []
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    // NODE_PERFORMANCE_GC_MAJOR is 4: mark-compact; the rest are scavenges and incremental steps.
    collections.push({ start: entry.startTime, major: (entry as unknown as { readonly detail?: { readonly kind?: number } }).detail?.kind === 4, ms: entry.duration })
  }
}).observe({ entryTypes: ["gc"] })

/** The collections that started between `from` and `to` (performance.now()), once the observer has heard of them. */
const collectionsIn = async (from: number, to: number) => {
  await new Promise((resolve) => setTimeout(resolve, 0))
  const within = collections.filter((c) => c.start >= from && c.start < to)
  collections.length = 0
  return {
    gcMinor: within.filter((c) => !c.major).length,
    gcMajor: within.filter((c) => c.major).length,
    gcPauseMs: within.reduce((ms, c) => ms + c.ms, 0)
  }
}

/**
 * With BENCH_CPU_PROFILE=<dir>, a CPU profile of each measured drain alone (not the submits before
 * it), written there as <figure>-<round>.cpuprofile: where the per-job CPU goes.
 */
const profileDir = process.env.BENCH_CPU_PROFILE
const startProfile = async () => {
  if (profileDir === undefined || profileDir === "") return undefined
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.start")
  return async (name: string) => {
    const { profile } = await session.post("Profiler.stop")
    await writeFile(`${profileDir}/${name}.cpuprofile`, JSON.stringify(profile))
    session.disconnect()
  }
}

/**
 * With BENCH_COUNT_STEPS=1, the Effect steps the drain ran, per job: every fiber of the engine
 * asks its scheduler once per step whether to yield, so a scheduler that counts the questions
 * counts the steps. Deterministic, unlike the CPU figures; this run's CPU is not the floor's
 * (the count costs a call per step).
 */
class CountingScheduler extends Scheduler.MixedScheduler {
  steps = 0
  override shouldYield(fiber: Fiber.Fiber<unknown, unknown>) {
    this.steps++
    return super.shouldYield(fiber)
  }
}
const counter = process.env.BENCH_COUNT_STEPS === "1" ? new CountingScheduler() : undefined

/** Whether every job is completed; `from` is where the last look stopped (jobs end roughly in order). */
const makeDrained = (engine: Engine, ids: ReadonlyArray<JobIdOf>) => {
  let from = 0
  return () =>
    engine.run(Effect.gen(function*() {
      const repo = yield* JobRepo
      while (from < ids.length) {
        const job = yield* repo.get(ids[from]!)
        if (Option.isNone(job) || job.value.status !== "completed") return false
        from++
      }
      return true
    }))
}

interface Round {
  readonly seconds: number
  readonly cpuMicrosPerJob: number
  readonly steps: number | undefined
  readonly gcMinor: number
  readonly gcMajor: number
  readonly gcPauseMs: number
}

/** One round: a fresh engine, `n` jobs submitted, then drained by `fibers` worker fibers, timed. */
const floorRound = async (build: Build, n: number, fibers: number, broker: boolean, profileName?: string): Promise<Round> => {
  const engine = await build.makeEngine({
    store: build.memoryStore(),
    queue: broker ? build.memoryQueue() : undefined,
    files: build.memoryFiles({ publicUrl: "http://bench.invalid" }),
    providers: { [BENCH_PROVIDER]: noopProvider },
    // Workers are started below, once the queue is full.
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    retentionSweeper: false,
    observability: counter === undefined
      ? Layer.succeed(References.MinimumLogLevel, "Warn")
      : Layer.merge(Layer.succeed(References.MinimumLogLevel, "Warn"), Layer.succeed(Scheduler.Scheduler, counter))
  })
  const scope = Effect.runSync(Scope.make())
  try {
    const callers = await seed(engine, 8)
    const ids: Array<JobIdOf> = []
    for (let i = 0; i < n; i++) ids.push((await submit(engine, callers[i % callers.length]!, `p${i}`)).job.id as JobIdOf)
    const drained = makeDrained(engine, ids)
    gc()
    const stopProfile = profileName === undefined ? undefined : await startProfile()
    const stepsBefore = counter?.steps ?? 0
    const cpu = process.cpuUsage()
    const start = performance.now()
    await engine.run(Scope.provide(Effect.flatMap(Worker, (worker) => worker.start(fibers)), scope))
    while (!(await drained())) await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    const end = performance.now()
    const used = process.cpuUsage(cpu)
    const steps = counter === undefined ? undefined : (counter.steps - stepsBefore) / n
    if (profileName !== undefined) await stopProfile?.(profileName)
    return {
      seconds: (end - start) / 1000,
      cpuMicrosPerJob: (used.user + used.system) / n,
      steps,
      ...(await collectionsIn(start, end))
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await engine.dispose()
  }
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const roundLine = (round: Round) =>
  `${round.cpuMicrosPerJob.toFixed(1)} µs CPU/job, ${round.seconds.toFixed(2)} s, GC ${round.gcMinor} minor ${round.gcMajor} major ${round.gcPauseMs.toFixed(0)} ms`

const summary = (measured: ReadonlyArray<Round>) => ({
  cpuMicrosPerJob: Math.round(median(measured.map((round) => round.cpuMicrosPerJob)) * 10) / 10,
  roundsCpuMicrosPerJob: measured.map((round) => Math.round(round.cpuMicrosPerJob * 10) / 10),
  roundsGc: measured.map((round) => `${round.gcMinor}/${round.gcMajor}/${Math.round(round.gcPauseMs)}ms`)
})

export const drainFloor = async () => {
  const n = settings.drainJobs
  const fibers = settings.drainProcesses * settings.drainConcurrency
  for (const broker of [false, true]) {
    if (!queues.includes(broker ? "broker" : "store")) continue
    const figure = broker ? "queue_drain_floor_broker" : "queue_drain_floor"
    const queue = broker ? "memory broker (memoryQueue), memory store" : "the memory store's own queue"
    log(`queue_drain_floor: ${queue}, ${n} jobs a round, ${warmups} warm-up and ${rounds} measured rounds, ${fibers} fibers in one process, the engine from ${engineFrom}${beside === undefined ? "" : `, beside ${besideDir}`}`)
    for (let i = 0; i < warmups; i++) {
      log(`  warm-up: ${roundLine(await floorRound(here, n, fibers, broker))}`)
      if (beside !== undefined) log(`  warm-up beside: ${roundLine(await floorRound(beside, n, fibers, broker))}`)
    }
    const measured: Array<Round> = []
    const besides: Array<Round> = []
    for (let i = 0; i < rounds; i++) {
      const ours = async () => {
        const round = await floorRound(here, n, fibers, broker, profileDir ? `${figure}-${i + 1}` : undefined)
        log(`  round ${i + 1}: ${roundLine(round)}`)
        measured.push(round)
      }
      const theirs = async () => {
        const round = await floorRound(beside!, n, fibers, broker)
        log(`  round ${i + 1} beside: ${roundLine(round)}`)
        besides.push(round)
      }
      if (beside === undefined) await ours()
      else if (i % 2 === 0) await ours().then(theirs)
      else await theirs().then(ours)
    }
    const seconds = median(measured.map((round) => round.seconds))
    const steps = counter === undefined ? undefined : median(measured.map((round) => round.steps!))
    emit({
      figure,
      engine: n / seconds,
      reference: null,
      unit: "jobs/s",
      better: "higher",
      referenceIs: "none: the engine's own per-job work in one process (no database, no broker)",
      params: {
        jobs: n,
        fibers,
        queue,
        engineFrom,
        ...(settings.limitedModel ? { limitedModelInCatalog: true } : {}),
        rounds,
        seconds: Math.round(seconds * 1000) / 1000,
        ...summary(measured),
        ...(steps === undefined ? {} : { stepsPerJob: Math.round(steps * 10) / 10 }),
        ...(beside === undefined ? {} : {
          beside: {
            dir: besideDir,
            ...summary(besides),
            // Each round's pair met the same load: their ratio is steadier than either figure.
            ratioMedian: Math.round(median(measured.map((round, i) => round.cpuMicrosPerJob / besides[i]!.cpuMicrosPerJob)) * 1000) / 1000
          }
        })
      }
    })
  }
}
