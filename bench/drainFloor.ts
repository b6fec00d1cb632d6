/**
 * queue_drain_floor: the engine's own per-job work, with no database and no broker: N jobs drained
 * in this one process by P x C worker fibers (the queue_drain sizes), the memory store, the no-op
 * provider, on the memory store's own queue and on the memory broker (`memoryQueue`, the broker
 * path: deliveries, claims by id, acks). What is left is the engine: the Effect runtime, the job's
 * state machine, its lease, its claim and its settlement. Jobs/s and CPU per job of this process
 * (`process.cpuUsage`, user + system), which bounds any queue_drain on one core: a PostgreSQL or
 * Redis drain adds its store's and broker's work to it. No reference: the floor says what the
 * targets leave for the rest.
 */
import { Effect, Exit, type Fiber, Layer, Option, References, Scheduler, Scope } from "effect"
import { writeFile } from "node:fs/promises"
import { Session } from "node:inspector/promises"
import { type Engine, JobRepo, makeEngine, Worker } from "genjobs"
import { memoryFiles, memoryQueue, memoryStore } from "genjobs/memory"
import { BENCH_PROVIDER, noopProvider, seed, submit } from "./lib/engine.js"
import { settings } from "./lib/env.js"
import { emit, log } from "./lib/report.js"

type JobIdOf = Parameters<JobRepo["Service"]["get"]>[0]

const POLL_MS = 20

/**
 * With BENCH_CPU_PROFILE=<dir>, a CPU profile of each drain alone (not the submits before it),
 * written there as <figure>.cpuprofile: where the per-job CPU goes.
 */
const profileDir = process.env.BENCH_CPU_PROFILE
const startProfile = async () => {
  if (profileDir === undefined || profileDir === "") return undefined
  const session = new Session()
  session.connect()
  await session.post("Profiler.enable")
  await session.post("Profiler.start")
  return async (figure: string) => {
    const { profile } = await session.post("Profiler.stop")
    await writeFile(`${profileDir}/${figure}.cpuprofile`, JSON.stringify(profile))
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

const floorRun = async (n: number, fibers: number, broker: boolean) => {
  const engine = await makeEngine({
    store: memoryStore(),
    queue: broker ? memoryQueue() : undefined,
    files: memoryFiles({ publicUrl: "http://bench.invalid" }),
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
    const stopProfile = await startProfile()
    const stepsBefore = counter?.steps ?? 0
    const cpu = process.cpuUsage()
    const start = performance.now()
    await engine.run(Scope.provide(Effect.flatMap(Worker, (worker) => worker.start(fibers)), scope))
    while (!(await drained())) await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    const seconds = (performance.now() - start) / 1000
    const used = process.cpuUsage(cpu)
    const steps = counter === undefined ? undefined : (counter.steps - stepsBefore) / n
    await stopProfile?.(broker ? "queue_drain_floor_broker" : "queue_drain_floor")
    return { seconds, cpuMicrosPerJob: (used.user + used.system) / n, steps }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await engine.dispose()
  }
}

export const drainFloor = async () => {
  const n = settings.drainJobs
  const fibers = settings.drainProcesses * settings.drainConcurrency
  for (const broker of [false, true]) {
    const queue = broker ? "memory broker (memoryQueue), memory store" : "the memory store's own queue"
    log(`queue_drain_floor: ${queue}, ${n} jobs, ${fibers} fibers in one process`)
    const run = await floorRun(n, fibers, broker)
    emit({
      figure: broker ? "queue_drain_floor_broker" : "queue_drain_floor",
      engine: n / run.seconds,
      reference: null,
      unit: "jobs/s",
      better: "higher",
      referenceIs: "none: the engine's own per-job work in one process (no database, no broker)",
      params: {
        jobs: n,
        fibers,
        queue,
        seconds: Math.round(run.seconds * 1000) / 1000,
        cpuMicrosPerJob: Math.round(run.cpuMicrosPerJob),
        ...(run.steps === undefined ? {} : { stepsPerJob: Math.round(run.steps * 10) / 10 })
      }
    })
  }
}
