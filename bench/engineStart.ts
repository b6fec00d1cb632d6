/**
 * engine_start: what starting and stopping an engine costs a process that serves no HTTP (a
 * worker process, a test's engine): `makeEngine` over the memory store with no workers, no
 * dispatchers and no sweeper, then `dispose`, BENCH_ENGINE_STARTS times (60) one after the other
 * after the process's first. The figure is the median ms from the call to the engine in hand; the
 * first start of the process (modules warm, nothing else) and the CPU of each start-and-stop in
 * params. No reference: it tracks the engine's own start between runs on one machine.
 */
import { Layer, References } from "effect"
import { makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { BENCH_PROVIDER, noopProvider } from "./lib/engine.js"
import { emit, ms, percentile } from "./lib/report.js"

const STARTS = Number(process.env.BENCH_ENGINE_STARTS ?? 60)

const startAndStop = async () => {
  const started = performance.now()
  const cpu = process.cpuUsage()
  const engine = await makeEngine({
    store: memoryStore(),
    files: memoryFiles({ publicUrl: "http://bench.invalid" }),
    providers: { [BENCH_PROVIDER]: noopProvider },
    workers: 0,
    webhookDispatchers: 0,
    uploadSweeper: false,
    observability: Layer.succeed(References.MinimumLogLevel, "Warn")
  })
  const readyMs = performance.now() - started
  await engine.dispose()
  const used = process.cpuUsage(cpu)
  return { readyMs, cpuMs: (used.user + used.system) / 1000 }
}

export const engineStart = async () => {
  const first = await startAndStop()
  const runs: Array<{ readyMs: number; cpuMs: number }> = []
  for (let i = 0; i < STARTS; i++) runs.push(await startAndStop())
  emit({
    figure: "engine_start",
    engine: percentile(runs.map((r) => r.readyMs), 50),
    reference: null,
    unit: "ms",
    better: "lower",
    referenceIs: "none: an engine's start in-process (memory store, no workers, no HTTP served); compare runs on one machine",
    params: {
      starts: STARTS,
      firstReadyMs: ms(first.readyMs),
      firstCpuMs: ms(first.cpuMs),
      cpuMsPerStartAndStop: ms(percentile(runs.map((r) => r.cpuMs), 50))
    }
  })
}
