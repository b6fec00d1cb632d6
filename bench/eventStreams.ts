/**
 * event_streams: the bundled server (SQLite, no workers, so every job stays pending and every
 * stream stays open) holding BENCH_STREAMS status streams (GET /v1/jobs/{id}/events), spread over
 * BENCH_STREAM_JOBS jobs. Each stream must have received its first event (the pending job) to
 * count. Reported: the server's RSS with the streams open against its idle RSS before them, and
 * its CPU use while it holds them (heartbeats, and each followed job re-read every 5 s for all its streams).
 */
import { readFileSync } from "node:fs"
import { type ClientRequest, request } from "node:http"
import { benchModel } from "./catalog.js"
import { settings } from "./lib/env.js"
import { emit, log } from "./lib/report.js"
import { makeAccounts, rssMiB, startBundledServer } from "./lib/server.js"

const HOLD_MS = 20_000
/**
 * Opening every stream must not take longer: past it the figure fails, saying how many opened.
 * Each open is a full API request (key, job read) made from this process on the same cores, so
 * on a shared machine opening 10,000 takes from under a minute to over two; the deadline is for
 * a server that stops keeping up, and `openSeconds` reports how long it took.
 */
const OPEN_DEADLINE_MS = 300_000
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100

const sleep = (msecs: number) => new Promise((resolve) => setTimeout(resolve, msecs))

const cpuTicks = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return Number(fields[11]) + Number(fields[12])
}

/** Opens one stream on its own socket; resolves once its first event arrived. */
const openStream = (url: string, key: string, jobId: string, open: Array<ClientRequest>) =>
  new Promise<void>((resolve, reject) => {
    const req = request(`${url}/v1/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}` }, agent: false }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`a stream answered ${res.statusCode}`))
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        if (chunk.includes("data:")) resolve()
      })
    })
    req.on("error", reject)
    req.end()
    open.push(req)
  })

export const eventStreams = async () => {
  const server = await startBundledServer({ WORKER_CONCURRENCY: "0" })
  const open: Array<ClientRequest> = []
  try {
    const [key] = await makeAccounts(server.url, 1)
    const jobIds: Array<string> = []
    for (let i = 0; i < settings.streamJobs; i++) {
      const response = await fetch(`${server.url}/v1/jobs/submit`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: benchModel("demo"), input: { prompt: `stream ${i}` } })
      })
      if (!response.ok) throw new Error(`submit answered ${response.status}: ${await response.text()}`)
      jobIds.push(((await response.json()) as { jobId: string }).jobId)
    }
    await sleep(2_000)
    const idle = rssMiB(server.pid)
    log(`event_streams: opening ${settings.streams} streams over ${jobIds.length} jobs`)
    const start = performance.now()
    let opened = 0
    // Opened in slices so the listen backlog is never the limit being measured.
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new Error(`event_streams: ${opened} of ${settings.streams} streams open after ${OPEN_DEADLINE_MS / 1000} s (server RSS ${rssMiB(server.pid)} MiB)`))
      }, OPEN_DEADLINE_MS)
    })
    try {
      for (let i = 0; i < settings.streams; i += 500) {
        const slice = Array.from({ length: Math.min(500, settings.streams - i) }, (_, n) => i + n)
        await Promise.race([
          Promise.all(slice.map((n) => openStream(server.url, key!, jobIds[n % jobIds.length]!, open).then(() => opened++))),
          deadline
        ])
      }
    } finally {
      clearTimeout(timer)
    }
    const openSeconds = (performance.now() - start) / 1000
    const ticksBefore = cpuTicks(server.pid)
    await sleep(HOLD_MS)
    const cpuPercent = ((cpuTicks(server.pid) - ticksBefore) / TICKS_PER_SECOND / (HOLD_MS / 1000)) * 100
    const held = rssMiB(server.pid)
    emit({
      figure: "event_streams",
      engine: held,
      reference: idle,
      unit: "MiB",
      better: "lower",
      referenceIs: "the same server's idle RSS before the streams",
      params: {
        streams: settings.streams,
        jobs: jobIds.length,
        store: "SQLite",
        openSeconds: Math.round(openSeconds * 10) / 10,
        cpuPercentWhileHolding: Math.round(cpuPercent),
        holdSeconds: HOLD_MS / 1000,
        kibPerStream: Math.round(((held - idle) * 1024) / settings.streams)
      }
    })
  } finally {
    for (const req of open) req.destroy()
    await server.stop()
  }
}
