/**
 * http_floor: the cheapest requests, at each client count of BENCH_HTTP_CONNECTIONS, with the
 * server's CPU per answer. GET /health (no key, no store) against the bundled server (API only)
 * and against the engine's HTTP framework alone (an @effect/platform HttpApi of one endpoint),
 * beside a bare node:http server answering the same body; and a schema-decoded POST
 * /v1/jobs/submit with nothing behind it on that framework, beside node:http parsing and
 * checking the same body by hand. Every request the engine answers costs at least this much: the
 * submit figures cannot pass the framework's own ratio, and the engine's own work is what the
 * submit costs above the POST floor.
 */
import { benchModel } from "./catalog.js"
import { cpuPerRequest } from "./lib/cpu.js"
import { settings } from "./lib/env.js"
import { getLoad, type LoadResult, submitLoad } from "./lib/load.js"
import { emit, log } from "./lib/report.js"
import { type RunningServer, startBareServer, startBundledServer } from "./lib/server.js"

interface Measured extends LoadResult {
  /** µs of the server process's CPU per answer. */
  readonly serverCpuUs: number
}

type Request = { readonly kind: "health" } | { readonly kind: "submit" }

/** Each client count in turn on one server, a warm-up before each. */
const measure = async (start: Promise<RunningServer>, request: Request, label: string): Promise<ReadonlyArray<Measured>> => {
  const server = await start
  try {
    const measured: Array<Measured> = []
    for (const connections of settings.httpClientCounts) {
      const common = { url: server.url, connections, label: `${label}, ${connections} clients` }
      const run = (seconds: number, warmup: boolean) =>
        request.kind === "health"
          ? getLoad({ ...common, path: "/health", seconds, warmup })
          : submitLoad({ ...common, keys: ["none"], model: benchModel("demo"), seconds, warmup })
      if (settings.httpWarmupSeconds > 0) await run(settings.httpWarmupSeconds, true)
      const cpu = cpuPerRequest(server.pid)
      const result = await run(settings.httpSeconds, false)
      measured.push({ ...result, serverCpuUs: cpu(result.ok).server })
    }
    return measured
  } finally {
    await server.stop()
  }
}

const report = (figure: string, engine: ReadonlyArray<Measured>, bare: ReadonlyArray<Measured>, what: string, referenceIs: string) =>
  settings.httpClientCounts.forEach((connections, i) =>
    emit({
      figure: `${figure}_${connections}_clients`,
      engine: engine[i]!.rps,
      reference: bare[i]!.rps,
      unit: "req/s",
      better: "higher",
      referenceIs,
      params: {
        measured: what,
        connections,
        seconds: settings.httpSeconds,
        engineP50Ms: engine[i]!.p50,
        engineP99Ms: engine[i]!.p99,
        referenceP50Ms: bare[i]!.p50,
        referenceP99Ms: bare[i]!.p99,
        engineServerCpuUsPerRequest: engine[i]!.serverCpuUs,
        referenceServerCpuUsPerRequest: bare[i]!.serverCpuUs
      }
    })
  )

export const httpFloor = async () => {
  log("http_floor: GET /health on the bundled server, the HttpApi framework alone, bare node:http; then a POST on the framework and on node:http")
  const health = { kind: "health" } as const
  const submit = { kind: "submit" } as const
  const engine = await measure(startBundledServer({ WORKER_CONCURRENCY: "0" }), health, "engine /health")
  const framework = await measure(startBareServer("httpApiHealth.ts", {}), health, "HttpApi /health")
  const bare = await measure(startBareServer("health.ts", {}), health, "bare /health")
  const frameworkPost = await measure(startBareServer("httpApiSubmit.ts", {}), submit, "HttpApi POST")
  const barePost = await measure(startBareServer("submitFloor.ts", {}), submit, "bare POST")
  const bareHealth = "bare node:http answering GET /health with the same body"
  report("http_floor_engine", engine, bare, "the bundled server (API only, SQLite)", bareHealth)
  report("http_floor_framework", framework, bare, "an @effect/platform HttpApi of one endpoint, nothing of the engine", bareHealth)
  report(
    "http_floor_framework_post",
    frameworkPost,
    barePost,
    "POST /v1/jobs/submit, its payload Schema-decoded, on an @effect/platform HttpApi with nothing behind it",
    "bare node:http parsing and checking the same body by hand"
  )
}
