/**
 * The process whose memory the large-output check watches: the engine on SQLite and local files
 * with the Replicate adapter pointed at a simulator, one worker. It loads the catalog and makes
 * an account through its own HTTP handler, prints "worker ready", and on SIGUSR2 submits one job
 * of the 200 MB video model, follows it and prints `job <json>` when it has ended.
 * Environment: SQLITE_FILE, FILES_DIR, REPLICATE_URL, REPLICATE_TOKEN; GC_EVERY_MS (with
 * --expose-gc) collects garbage that often while the job runs and reads RSS right after each
 * collection, so it shows what the process holds rather than what V8 has not collected yet, and
 * prints `held {"baseline","peak"}` before the job line (see largeOutputRss.test.ts).
 */
import { REPLICATE_LARGE_VIDEO, replicateCatalog } from "./replicateCatalog.js"
import { envString, startReplicateEngine } from "./replicateEngine.js"

const ADMIN = "large-output-admin"
const engine = await startReplicateEngine({
  store: { sqlite: envString("SQLITE_FILE") },
  filesDir: envString("FILES_DIR"),
  replicateUrl: envString("REPLICATE_URL"),
  replicateToken: envString("REPLICATE_TOKEN"),
  workers: 1,
  leaseMs: 30_000,
  pollIntervalMs: 200,
  adminToken: ADMIN
})

const api = async (method: string, path: string, token: string, body?: unknown) => {
  const response = await engine.fetch(new Request(`http://engine.test${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  }))
  const answer = await response.json() as any
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${JSON.stringify(answer)}`)
  return answer
}

await api("PUT", "/admin/catalog", ADMIN, replicateCatalog())
const account = await api("POST", "/admin/accounts", ADMIN, { name: "large", creditsMicroCents: 100_000_000 })
const { key } = await api("POST", `/admin/accounts/${account.id}/keys`, ADMIN, { name: "k" })

process.once("SIGUSR2", async () => {
  const gc = (globalThis as { gc?: () => void }).gc
  const every = Number(process.env["GC_EVERY_MS"] ?? "0")
  // RSS read just after a full collection: what the process holds, whenever the collection runs.
  const held = { baseline: 0, peak: 0 }
  if (gc !== undefined && every > 0) {
    gc()
    held.baseline = held.peak = process.memoryUsage.rss()
    setInterval(() => {
      gc()
      held.peak = Math.max(held.peak, process.memoryUsage.rss())
    }, every).unref()
  }
  const { jobId } = await api("POST", "/v1/jobs/submit", key, { model: REPLICATE_LARGE_VIDEO, input: { prompt: "a long video", sim_duration_ms: 200 } })
  for (;;) {
    const job = await api("GET", `/v1/jobs/${jobId}`, key)
    if (job.status === "completed" || job.status === "failed" || job.status === "cancelled") {
      if (held.baseline > 0) console.log(`held ${JSON.stringify(held)}`)
      console.log(`job ${JSON.stringify(job)}`)
      return
    }
    await new Promise((r) => setTimeout(r, 100))
  }
})
process.once("SIGTERM", () => void engine.dispose().then(() => process.exit(0)))
// The baseline is taken after a collection, so garbage of the start-up does not hide growth.
;(globalThis as { gc?: () => void }).gc?.()
console.log("worker ready")
