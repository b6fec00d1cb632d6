import { Layer, References } from "effect"
import { DEMO_PROVIDER_ID, type Engine, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const ORIGIN = "http://host.test"
const TOKEN = "process-metrics-token"

let engine: Engine
beforeAll(async () => {
  engine = await makeEngine({
    store: memoryStore(),
    files: memoryFiles({ publicUrl: ORIGIN }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    metrics: { token: TOKEN },
    workers: 0,
    webhookDispatchers: 0,
    observability: Layer.succeed(References.MinimumLogLevel, "Error")
  })
})
afterAll(() => engine.dispose())

const scrape = async () => {
  const response = await engine.fetch(new Request(`${ORIGIN}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } }))
  expect(response.status).toBe(200)
  return response.text()
}

/** Each sample's value by its name and labels as written (`name{a="b"}`). */
const samples = (text: string) =>
  new Map(text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const at = line.lastIndexOf(" ")
    return [line.slice(0, at), Number(line.slice(at + 1))] as const
  }))

describe("/metrics: the process's own metrics, under prom-client's default names", () => {
  it("exports CPU, memory, heap, file descriptors and handles, each family once, beside the engine's", async () => {
    const text = await scrape()
    const values = samples(text)
    expect(values.get("process_cpu_seconds_total")).toBeGreaterThan(0)
    expect(values.get("process_cpu_seconds_total")).toBeCloseTo(values.get("process_cpu_user_seconds_total")! + values.get("process_cpu_system_seconds_total")!, 6)
    const rss = process.memoryUsage.rss()
    expect(values.get("process_resident_memory_bytes")).toBeGreaterThan(rss / 2)
    expect(values.get("process_resident_memory_bytes")).toBeLessThan(rss * 2)
    expect(values.get("nodejs_heap_size_used_bytes")).toBeGreaterThan(0)
    expect(values.get("nodejs_heap_size_used_bytes")).toBeLessThanOrEqual(values.get("nodejs_heap_size_total_bytes")!)
    expect(Math.abs(values.get("process_start_time_seconds")! - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2)
    expect(values.get(`nodejs_version_info{version="${process.version}",major="${process.versions.node.split(".")[0]}",minor="${process.versions.node.split(".")[1]}",patch="${process.versions.node.split(".")[2]}"}`)).toBe(1)
    if (process.platform === "linux") {
      expect(values.get("process_open_fds")).toBeGreaterThan(2)
      expect(values.get("process_open_fds")).toBeLessThanOrEqual(values.get("process_max_fds")!)
    }
    expect(values.get("nodejs_active_handles_total")).toBeGreaterThanOrEqual(0)
    // The engine's own metrics are still there (the first scrape's request counted), and no family is written twice.
    expect(await scrape()).toContain("# TYPE genjobs_http_")
    const helps = text.split("\n").filter((line) => line.startsWith("# HELP ")).map((line) => line.split(" ")[2])
    expect(helps.length).toBe(new Set(helps).size)
  })

  it("shows the event loop blocked since the last scrape in its delay, and collections in the GC histogram", async () => {
    await scrape()
    // The delay monitor samples on a 10 ms timer: let it run once after the scrape's reset, so
    // the block below falls in a sampled interval, and once after the block to record it.
    await new Promise((resolve) => setTimeout(resolve, 30))
    // Blocks the loop 200 ms: however little CPU a loaded machine gives it, the timer waits that long.
    const until = performance.now() + 200
    while (performance.now() < until) {
      // blocking
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    const lag = samples(await scrape())
    expect(lag.get("nodejs_eventloop_lag_max_seconds")).toBeGreaterThanOrEqual(0.15)
    expect(lag.get("nodejs_eventloop_lag_p99_seconds")).toBeGreaterThanOrEqual(lag.get("nodejs_eventloop_lag_p50_seconds")!)
    // Allocates short-lived objects a round at a time until the young generation's collector has
    // run and been counted: how much a time-boxed loop allocates depends on the CPU it gets, and
    // the GC observer is told in a later task, hence a yield between rounds.
    const minor = 'nodejs_gc_duration_seconds_count{kind="minor"}'
    let values = samples(await scrape())
    for (let round = 0; round < 1_000 && !(values.get(minor)! > 0); round++) {
      const junk: Array<{ readonly n: number; readonly s: string }> = []
      for (let i = 0; i < 50_000; i++) junk.push({ n: i, s: `x${i}` })
      await new Promise((resolve) => setImmediate(resolve))
      values = samples(await scrape())
    }
    expect(values.get(minor)).toBeGreaterThan(0)
    expect(values.get('nodejs_gc_duration_seconds_bucket{le="+Inf",kind="minor"}')).toBe(values.get(minor))
  })
})
