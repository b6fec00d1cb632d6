/**
 * http_floor: GET /health, the cheapest request the engine answers (no key, no store), against
 * the bundled server (API only) and against a bare node:http server answering the same body;
 * and the same for the engine's HTTP framework alone (an @effect/platform HttpApi of one
 * endpoint). Every request the engine answers costs at least this much: the submit figures
 * cannot pass the framework's own ratio.
 */
import { getLoad, type LoadResult } from "./lib/load.js"
import { settings } from "./lib/env.js"
import { emit, log } from "./lib/report.js"
import { type RunningServer, startBareServer, startBundledServer } from "./lib/server.js"

const measure = async (start: Promise<RunningServer>, label: string): Promise<LoadResult> => {
  const server = await start
  try {
    const common = { url: server.url, path: "/health", connections: settings.httpConnections, label }
    if (settings.httpWarmupSeconds > 0) await getLoad({ ...common, seconds: settings.httpWarmupSeconds, warmup: true })
    return await getLoad({ ...common, seconds: settings.httpSeconds })
  } finally {
    await server.stop()
  }
}

const report = (figure: string, engine: LoadResult, bare: LoadResult, what: string) =>
  emit({
    figure,
    engine: engine.rps,
    reference: bare.rps,
    unit: "req/s",
    better: "higher",
    referenceIs: "bare node:http answering GET /health with the same body",
    params: {
      measured: what,
      connections: settings.httpConnections,
      seconds: settings.httpSeconds,
      engineP50Ms: engine.p50,
      engineP99Ms: engine.p99,
      referenceP50Ms: bare.p50,
      referenceP99Ms: bare.p99
    }
  })

export const httpFloor = async () => {
  log("http_floor: GET /health on the bundled server, the HttpApi framework alone, bare node:http")
  const engine = await measure(startBundledServer({ WORKER_CONCURRENCY: "0" }), "engine /health")
  const framework = await measure(startBareServer("httpApiHealth.ts", {}), "HttpApi /health")
  const bare = await measure(startBareServer("health.ts", {}), "bare /health")
  report("http_floor_engine", engine, bare, "the bundled server (API only, SQLite)")
  report("http_floor_framework", framework, bare, "an @effect/platform HttpApi of one endpoint, nothing of the engine")
}
