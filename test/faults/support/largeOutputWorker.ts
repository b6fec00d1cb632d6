/**
 * The process whose memory the large-output check watches: the engine on SQLite and local files
 * with the Replicate adapter pointed at a simulator, one worker. It loads the catalog and makes
 * an account through its own HTTP handler, prints "worker ready", and on SIGUSR2 submits one job
 * of the 200 MB video model, follows it and prints `job <json>` when it has ended.
 * Environment: SQLITE_FILE, FILES_DIR, REPLICATE_URL, REPLICATE_TOKEN; LIVE_MEMORY=1 (with
 * --expose-gc): while the job runs, each time 16 MB more were read it collects garbage and reads the live memory (V8's heap and ArrayBuffers), so it shows what
 * the process holds rather than garbage V8 has not collected or malloc has not given back; prints
 * `held {"baseline","peak"}` before the job line (see largeOutputRss.test.ts).
 */
import { readFileSync } from "node:fs"
import { REPLICATE_LARGE_VIDEO, replicateCatalog } from "./replicateCatalog.js"
import { envString, startReplicateEngine } from "./replicateEngine.js"

const ADMIN = "large-output-admin"
/** The live memory is read each time this much more has been read: about a dozen times per 200 MB. */
const SAMPLE_EVERY_BYTES = 16 * 1024 * 1024
/** Bytes this process has read by any read call, sockets included (Linux). */
const bytesRead = () => Number(/rchar: (\d+)/.exec(readFileSync("/proc/self/io", "utf8"))![1])
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
  // What the process holds: V8's heap and the ArrayBuffers (every Buffer and Uint8Array of a
  // body) still reachable. Not RSS: the 64 KB chunks a download allocates and drops go back to
  // malloc, and glibc keeps most of them resident after they are freed (measured: +26 to +50 MiB
  // of RSS left after the job with 0.1 MiB of ArrayBuffers alive, +5 MiB with
  // MALLOC_MMAP_THRESHOLD_=16384), so RSS after a collection is the high-water of the garbage
  // between collections, not what is held. Collected twice: V8 frees dead ArrayBuffers on a
  // background thread after a collection, and the next collection waits for that to finish.
  const live = () => {
    gc!()
    gc!()
    const memory = process.memoryUsage()
    return memory.heapUsed + memory.arrayBuffers
  }
  const held = { baseline: 0, peak: 0 }
  if (gc !== undefined && process.env["LIVE_MEMORY"] === "1") {
    held.baseline = held.peak = live()
    // Sampled by the bytes read (sockets included), not by the clock: the same dozen samples
    // whether the machine moves 200 MB in 3 s or in 60, and two full collections per sample
    // only. A body buffered whole is still read from its socket, so the samples see it grow.
    let sampledAt = bytesRead()
    setInterval(() => {
      if (bytesRead() - sampledAt < SAMPLE_EVERY_BYTES) return
      sampledAt = bytesRead()
      held.peak = Math.max(held.peak, live())
    }, 20).unref()
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
