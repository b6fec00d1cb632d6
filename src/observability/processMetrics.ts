/**
 * The process metrics a Node service is expected to export, under the names of prom-client's
 * `collectDefaultMetrics` (`process_*`, `nodejs_*`), so the usual Node.js dashboards and alerts
 * read them unchanged. Written here with Node's own counters (process, v8, perf_hooks) because
 * prom-client is not a dependency of the package (docs/decisions.md, "Process metrics").
 */
import { readdirSync, readFileSync } from "node:fs"
import { constants, type EventLoopUtilization, monitorEventLoopDelay, PerformanceObserver, performance } from "node:perf_hooks"
import { getHeapSpaceStatistics, getHeapStatistics } from "node:v8"
import { formatValue } from "./prometheus.js"

/** prom-client's GC buckets, in seconds. */
export const GC_BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5] as const

const GC_KINDS: Readonly<Record<number, string>> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb"
}

interface GcHistogram {
  readonly counts: Array<number>
  count: number
  sum: number
}

/** The monitors a scrape reads; started once per process (they observe the process, not an engine). */
interface Monitors {
  readonly loopDelay: ReturnType<typeof monitorEventLoopDelay>
  readonly gc: Map<string, GcHistogram>
  utilization: EventLoopUtilization
}

let monitors: Monitors | undefined

/**
 * Starts the monitors, once per process: where /metrics is served (so the first scrape has a
 * loop delay and collections to show), else at the first scrape. They run for the process's
 * life, as prom-client's do: neither the delay monitor's timer nor the GC observer keeps the
 * process alive, and two engines in one process share them rather than counting each
 * collection twice.
 */
export const startProcessMetrics = (): Monitors => {
  if (monitors !== undefined) return monitors
  const loopDelay = monitorEventLoopDelay({ resolution: 10 })
  loopDelay.enable()
  const gc = new Map<string, GcHistogram>()
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = GC_KINDS[(entry as { detail?: { kind?: number } }).detail?.kind ?? -1] ?? "unknown"
      let histogram = gc.get(kind)
      if (histogram === undefined) gc.set(kind, histogram = { counts: GC_BUCKETS.map(() => 0), count: 0, sum: 0 })
      const seconds = entry.duration / 1000
      GC_BUCKETS.forEach((bound, i) => {
        if (seconds <= bound) histogram.counts[i]! += 1
      })
      histogram.count += 1
      histogram.sum += seconds
    }
  })
  observer.observe({ entryTypes: ["gc"] })
  monitors = { loopDelay, gc, utilization: performance.eventLoopUtilization() }
  return monitors
}

type Labels = Readonly<Record<string, string>>

/** One family in the text format: HELP, TYPE, then its samples. */
const family = (name: string, type: "counter" | "gauge" | "histogram", help: string, samples: ReadonlyArray<readonly [string, Labels, number]>) => [
  `# HELP ${name} ${help}`,
  `# TYPE ${name} ${type}`,
  ...samples.map(([sampleName, labels, value]) => {
    const rendered = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, "\\\"")}"`).join(",")
    return `${sampleName}${rendered === "" ? "" : `{${rendered}}`} ${formatValue(value)}`
  })
]

const one = (name: string, type: "counter" | "gauge", help: string, value: number) => family(name, type, help, [[name, {}, value]])

/** Linux's view of the process's descriptors; absent elsewhere (prom-client leaves them out there too). */
const fileDescriptors = (): { open: number; max: number | undefined } | undefined => {
  try {
    const open = readdirSync("/proc/self/fd").length - 1 // the directory read itself holds one
    const limit = /^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))
    return { open, max: limit === null ? undefined : Number(limit[1]) }
  } catch {
    return undefined
  }
}

/** Virtual memory and the heap's share of it, from /proc/self/status (Linux only). */
const procStatus = (): { virtual: number; heap: number } | undefined => {
  try {
    const status = readFileSync("/proc/self/status", "utf8")
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN) * 1024
    return { virtual: kib("VmSize"), heap: kib("VmData") }
  } catch {
    return undefined
  }
}

/** The process metrics now, in the Prometheus text format (ending in a newline). */
export const processMetricsText = (): string => {
  const monitors = startProcessMetrics()
  const { loopDelay, gc } = monitors
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  const heap = getHeapStatistics()
  const fds = fileDescriptors()
  const status = procStatus()
  const resources = process.getActiveResourcesInfo()
  const byType = new Map<string, number>()
  for (const type of resources) byType.set(type, (byType.get(type) ?? 0) + 1)
  const now = performance.eventLoopUtilization()
  const utilization = performance.eventLoopUtilization(now, monitors.utilization)
  monitors.utilization = now
  const [major, minor, patch] = process.versions.node.split(".")
  // The delay histogram since the last scrape: each scrape reads one interval, as prom-client's
  // does. Before its first sample (10 ms after it starts) it holds no figure: NaN, not its sentinels.
  const sampled = loopDelay.count > 0
  const ns = (value: number) => (sampled ? value / 1e9 : Number.NaN)
  const delay = {
    min: ns(loopDelay.min),
    max: ns(loopDelay.max),
    mean: ns(loopDelay.mean),
    stddev: ns(loopDelay.stddev),
    p50: ns(loopDelay.percentile(50)),
    p90: ns(loopDelay.percentile(90)),
    p99: ns(loopDelay.percentile(99))
  }
  loopDelay.reset()
  const lines = [
    ...one("process_cpu_user_seconds_total", "counter", "Total user CPU time spent in seconds.", cpu.user / 1e6),
    ...one("process_cpu_system_seconds_total", "counter", "Total system CPU time spent in seconds.", cpu.system / 1e6),
    ...one("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", (cpu.user + cpu.system) / 1e6),
    ...one("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", Math.round((Date.now() - process.uptime() * 1000) / 1000)),
    ...one("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", memory.rss),
    ...(status === undefined ? [] : [
      ...one("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", status.virtual),
      ...one("process_heap_bytes", "gauge", "Process heap size in bytes.", status.heap)
    ]),
    ...(fds === undefined ? [] : [
      ...one("process_open_fds", "gauge", "Number of open file descriptors.", fds.open),
      ...(fds.max === undefined ? [] : one("process_max_fds", "gauge", "Maximum number of open file descriptors.", fds.max))
    ]),
    ...one("nodejs_eventloop_lag_seconds", "gauge", "Lag of event loop in seconds (the mean delay since the last scrape).", delay.mean),
    ...one("nodejs_eventloop_lag_min_seconds", "gauge", "The minimum recorded event loop delay.", delay.min),
    ...one("nodejs_eventloop_lag_max_seconds", "gauge", "The maximum recorded event loop delay.", delay.max),
    ...one("nodejs_eventloop_lag_mean_seconds", "gauge", "The mean of the recorded event loop delays.", delay.mean),
    ...one("nodejs_eventloop_lag_stddev_seconds", "gauge", "The standard deviation of the recorded event loop delays.", delay.stddev),
    ...one("nodejs_eventloop_lag_p50_seconds", "gauge", "The 50th percentile of the recorded event loop delays.", delay.p50),
    ...one("nodejs_eventloop_lag_p90_seconds", "gauge", "The 90th percentile of the recorded event loop delays.", delay.p90),
    ...one("nodejs_eventloop_lag_p99_seconds", "gauge", "The 99th percentile of the recorded event loop delays.", delay.p99),
    ...one("nodejs_eventloop_utilization_ratio", "gauge", "Share of the time since the last scrape the event loop was busy.", utilization.utilization),
    ...family("nodejs_active_resources", "gauge", "Number of active resources keeping the event loop alive, by type.",
      [...byType].sort(([a], [b]) => (a < b ? -1 : 1)).map(([type, n]) => ["nodejs_active_resources", { type }, n] as const)),
    ...one("nodejs_active_resources_total", "gauge", "Total number of active resources.", resources.length),
    // Requests are the resources libuv names *Req* (FSReqCallback, GetAddrInfoReqWrap, ...); the rest are handles.
    ...one("nodejs_active_handles_total", "gauge", "Total number of active handles.", resources.filter((type) => !type.includes("Req")).length),
    ...one("nodejs_active_requests_total", "gauge", "Total number of active requests.", resources.filter((type) => type.includes("Req")).length),
    ...one("nodejs_heap_size_total_bytes", "gauge", "Process heap size from Node.js in bytes.", memory.heapTotal),
    ...one("nodejs_heap_size_used_bytes", "gauge", "Process heap size used from Node.js in bytes.", memory.heapUsed),
    ...one("nodejs_external_memory_bytes", "gauge", "Node.js external memory size in bytes.", memory.external),
    ...one("nodejs_heap_size_limit_bytes", "gauge", "The heap's size limit (--max-old-space-size) in bytes.", heap.heap_size_limit),
    ...(["total", "used", "available"] as const).flatMap((what) =>
      family(`nodejs_heap_space_size_${what}_bytes`, "gauge", `Process heap space size ${what} from Node.js in bytes.`,
        getHeapSpaceStatistics().map((space) => [
          `nodejs_heap_space_size_${what}_bytes`,
          { space: space.space_name.replace(/_space$/, "") },
          what === "total" ? space.space_size : what === "used" ? space.space_used_size : space.space_available_size
        ] as const))
    ),
    ...family("nodejs_version_info", "gauge", "Node.js version info.", [[
      "nodejs_version_info",
      { version: process.version, major: major ?? "", minor: minor ?? "", patch: patch ?? "" },
      1
    ]]),
    ...family("nodejs_gc_duration_seconds", "histogram", "Garbage collection duration by kind, one of major, minor, incremental or weakcb.",
      [...gc].sort(([a], [b]) => (a < b ? -1 : 1)).flatMap(([kind, histogram]) => [
        ...GC_BUCKETS.map((bound, i) => ["nodejs_gc_duration_seconds_bucket", { le: String(bound), kind }, histogram.counts[i]!] as const),
        ["nodejs_gc_duration_seconds_bucket", { le: "+Inf", kind }, histogram.count] as const,
        ["nodejs_gc_duration_seconds_sum", { kind }, histogram.sum] as const,
        ["nodejs_gc_duration_seconds_count", { kind }, histogram.count] as const
      ]))
  ]
  return `${lines.join("\n")}\n`
}
