/**
 * event_streams: live status on one API process (the bundled server, PostgreSQL, no workers, so
 * every job stays pending until the bench cancels it), one job followed per client:
 *
 * - BENCH_STREAMS status streams (GET /v1/jobs/{id}/events), each on its own job and socket, each
 *   counted once its first event arrived. RSS with them open against the server's idle RSS, and
 *   CPU while they sit idle for HOLD_MS (heartbeats and the safety sweep included), beside a bare
 *   node:http server (bench/bareServers/heldResponses.ts) holding as many open responses. Then
 *   completion to client: BENCH_STREAM_COMPLETIONS of their jobs cancelled at COMPLETIONS_PER_SECOND,
 *   each timed from the cancel sent to its stream's final event.
 * - BENCH_STREAMS long-polls (GET /v1/jobs/{id}, `Prefer: wait=LONG_POLL_WAIT`) on other pending
 *   jobs, opened together on keep-alive sockets and re-issued when answered before their job
 *   ended (the herd of re-issues comes LONG_POLL_WAIT later); refusals of any kind counted
 *   (a non-200 answer or a failed request), and completion to client for as many jobs cancelled
 *   at the same rate.
 *
 * BENCH_EVENT_STREAMS_BASE=<a worktree with `dist/` built> measures that build too in the same
 * run, before this one (before/after side by side).
 */
import { readFileSync } from "node:fs"
import { Agent, type ClientRequest, request } from "node:http"
import { benchModel } from "./catalog.js"
import { settings } from "./lib/env.js"
import { withDatabase } from "./lib/pg.js"
import { emit, log, percentile } from "./lib/report.js"
import {
  makeAccounts,
  rssMiB,
  type RunningServer,
  startBareServer,
  startBuiltServerAt,
  startBundledServer
} from "./lib/server.js"

/** Longer than the engine's safety sweep (30 s), so the idle CPU includes a whole sweep. */
const HOLD_MS = 35_000
/** Opening every stream must not take longer: past it the figure fails, saying how many opened. */
const OPEN_DEADLINE_MS = 300_000
const COMPLETIONS = Number(process.env.BENCH_STREAM_COMPLETIONS ?? 1_000)
const COMPLETIONS_PER_SECOND = 100
/** Seconds of `Prefer: wait`: the first answers of jobs still pending, and their re-issues, come after it. */
const LONG_POLL_WAIT = 20
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100

const sleep = (msecs: number) => new Promise((resolve) => setTimeout(resolve, msecs))

const cpuTicks = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return Number(fields[11]) + Number(fields[12])
}

const round1 = (n: number) => Math.round(n * 10) / 10

/** 503 answers to opening a stream (shed: the store was busy), each retried after its Retry-After as a client would. */
let shedOpens = 0

/** Opens one stream on its own socket; resolves once its first event arrived; `onData` sees every chunk after. */
const openStream = (url: string, path: string, key: string, open: Array<ClientRequest>, onData: (chunk: string) => void): Promise<void> =>
  new Promise<void>((resolve, reject) => {
    const req = request(`${url}${path}`, { headers: { authorization: `Bearer ${key}` }, agent: false }, (res) => {
      if (res.statusCode === 503) {
        shedOpens++
        res.resume()
        const after = Number(res.headers["retry-after"] ?? 1)
        return void sleep(after * 1000).then(() => openStream(url, path, key, open, onData)).then(resolve, reject)
      }
      if (res.statusCode !== 200) return reject(new Error(`a stream answered ${res.statusCode}`))
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        // The bare server's first bytes are its `: open` comment; the engine's count at the first event.
        if (chunk.includes("data:") || (path === "/hold" && chunk.includes(": open"))) resolve()
        onData(chunk)
      })
    })
    req.on("error", reject)
    req.end()
    open.push(req)
  })

/** Opens `count` streams in slices (the listen backlog is not what is measured); fails past OPEN_DEADLINE_MS. */
const openAll = async (count: number, openOne: (n: number) => Promise<void>, rss: () => number) => {
  let opened = 0
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${opened} of ${count} streams open after ${OPEN_DEADLINE_MS / 1000} s (server RSS ${rss()} MiB)`)), OPEN_DEADLINE_MS)
  })
  const start = performance.now()
  try {
    for (let i = 0; i < count; i += 500) {
      const slice = Array.from({ length: Math.min(500, count - i) }, (_, n) => i + n)
      await Promise.race([Promise.all(slice.map((n) => openOne(n).then(() => opened++))), deadline])
    }
  } finally {
    clearTimeout(timer)
  }
  return (performance.now() - start) / 1000
}

/** Server RSS and CPU holding `count` idle streams. */
const holdIdle = async (pid: number, idleMiB: number, count: number) => {
  const ticksBefore = cpuTicks(pid)
  await sleep(HOLD_MS)
  const cpuPercent = ((cpuTicks(pid) - ticksBefore) / TICKS_PER_SECOND / (HOLD_MS / 1000)) * 100
  const held = rssMiB(pid)
  return { idleMiB, heldMiB: held, kibPerStream: round1(((held - idleMiB) * 1024) / count), cpuPercent: round1(cpuPercent) }
}

const bare = async () => {
  const server = await startBareServer("heldResponses.ts", {})
  const open: Array<ClientRequest> = []
  try {
    await sleep(1_000)
    const idle = rssMiB(server.pid)
    const openSeconds = await openAll(settings.streams, () => openStream(server.url, "/hold", "", open, () => undefined), () => rssMiB(server.pid))
    return { ...(await holdIdle(server.pid, idle, settings.streams)), openSeconds: round1(openSeconds) }
  } finally {
    for (const req of open) req.destroy()
    await server.stop()
  }
}

/**
 * Cancels `jobIds` at COMPLETIONS_PER_SECOND over a few keep-alive connections opened first:
 * with 10,000 sockets connecting at once, a new connection may wait in the server's accept
 * queue for seconds, which is not the latency measured. `sent` records when each cancel left.
 */
const cancelPaced = async (url: string, key: string, jobIds: ReadonlyArray<string>, sent: Map<string, number>) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 })
  let failed = 0
  const call = (method: string, path: string) =>
    new Promise<void>((resolve) => {
      const req = request(`${url}${path}`, { method, agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        if (res.statusCode !== 200) failed++
        res.resume()
        res.on("end", () => resolve())
      })
      req.on("error", () => {
        failed++
        resolve()
      })
      req.end()
    })
  try {
    await Promise.all(Array.from({ length: 8 }, () => call("GET", "/health")))
    failed = 0
    const start = performance.now()
    const cancels: Array<Promise<void>> = []
    for (let i = 0; i < jobIds.length; i++) {
      const due = start + (i * 1000) / COMPLETIONS_PER_SECOND
      const wait = due - performance.now()
      if (wait > 0) await sleep(wait)
      sent.set(jobIds[i]!, performance.now())
      cancels.push(call("POST", `/v1/jobs/${jobIds[i]}/cancel`))
    }
    await Promise.all(cancels)
    return failed
  } finally {
    agent.destroy()
  }
}

/**
 * The job's end as the server stamped it (`completedAt`, set with the cancel's commit) to the
 * client's receipt, both on this machine's clock: completion to client. Beside it, from the
 * cancel request sent, which adds the cancel's own answer time on a busy machine.
 */
const completedAtIn = (text: string): number | undefined => {
  const match = /"completedAt":"?([^",}]+)/.exec(text)
  if (match === null) return undefined
  const value = Number.isNaN(Number(match[1])) ? Date.parse(match[1]!) : Number(match[1])
  return Number.isNaN(value) ? undefined : value
}

interface Seen {
  readonly at: number
  readonly wallLatencyMs: number | undefined
}

const seenNow = (text: string): Seen => {
  const completedAt = completedAtIn(text)
  return { at: performance.now(), wallLatencyMs: completedAt === undefined ? undefined : Date.now() - completedAt }
}

const latencies = (sent: Map<string, number>, seen: Map<string, Seen>) => {
  const fromSent = [...sent].flatMap(([jobId, at]) => (seen.has(jobId) ? [seen.get(jobId)!.at - at] : []))
  const first = Math.min(...sent.values())
  const ends = [...sent].flatMap(([jobId, at]) => {
    const latency = seen.get(jobId)?.wallLatencyMs
    return latency === undefined ? [] : [{ sentAtMs: Math.round(at - first), ms: latency }]
  })
  const fromEnd = ends.map((end) => end.ms)
  // The ten slowest, with when their cancel went out (ms into the cancels): a p99 set by one
  // burst shows as ten neighbours, spread ones as a spread.
  const slowest = ends.sort((a, b) => b.ms - a.ms).slice(0, 10).map((end) => ({ ...end, ms: Math.round(end.ms) }))
  return {
    p50Ms: Math.round(percentile(fromEnd, 50)),
    p99Ms: Math.round(percentile(fromEnd, 99)),
    fromCancelSentP50Ms: Math.round(percentile(fromSent, 50)),
    fromCancelSentP99Ms: Math.round(percentile(fromSent, 99)),
    missing: sent.size - fromSent.length,
    slowest
  }
}

const submitJobs = async (url: string, key: string, count: number) => {
  const jobIds: Array<string> = []
  const submitOne = async (i: number) => {
    const response = await fetch(`${url}/v1/jobs/submit`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: benchModel("demo"), input: { prompt: `stream ${i}` } })
    })
    if (!response.ok) throw new Error(`submit answered ${response.status}: ${await response.text()}`)
    jobIds[i] = ((await response.json()) as { jobId: string }).jobId
  }
  for (let i = 0; i < count; i += 16) await Promise.all(Array.from({ length: Math.min(16, count - i) }, (_, n) => submitOne(i + n)))
  return jobIds
}

/** The status streams: held idle, then their completions. */
const streams = async (server: RunningServer, key: string, jobIds: ReadonlyArray<string>) => {
  const idle = rssMiB(server.pid)
  const open: Array<ClientRequest> = []
  const ended = new Map<string, Seen>()
  shedOpens = 0
  try {
    const openSeconds = await openAll(settings.streams, (n) =>
      openStream(server.url, `/v1/jobs/${jobIds[n]}/events`, key, open, (chunk) => {
        if (chunk.includes("\"cancelled\"")) ended.set(jobIds[n]!, seenNow(chunk))
      }), () => rssMiB(server.pid))
    const held = await holdIdle(server.pid, idle, settings.streams)
    const sent = new Map<string, number>()
    const cancelsFailed = await cancelPaced(server.url, key, jobIds.slice(0, COMPLETIONS), sent)
    await sleep(2_000)
    return { ...held, openSeconds: round1(openSeconds), shedOpens, cancelsFailed, completion: latencies(sent, ended) }
  } finally {
    for (const req of open) req.destroy()
  }
}

/** The long-polls, opened together, re-issued until their job ends or the phase does. */
const longPolls = async (server: RunningServer, key: string, jobIds: ReadonlyArray<string>) => {
  const agent = new Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY })
  const refusals = new Map<string, number>()
  const refuse = (why: string) => refusals.set(why, (refusals.get(why) ?? 0) + 1)
  const ended = new Map<string, Seen>()
  let requests = 0
  let stopping = false
  const poll = (jobId: string): void => {
    if (stopping) return
    requests++
    const req = request(`${server.url}/v1/jobs/${jobId}`, { agent, headers: { authorization: `Bearer ${key}`, prefer: `wait=${LONG_POLL_WAIT}` } }, (res) => {
      let body = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => (body += chunk))
      res.on("end", () => {
        if (res.statusCode !== 200) return refuse(String(res.statusCode))
        if (body.includes("\"cancelled\"")) return void ended.set(jobId, seenNow(body))
        poll(jobId)
      })
    })
    req.on("error", (error) => {
      if (!stopping) refuse(error.message)
    })
    req.end()
  }
  const start = performance.now()
  for (const jobId of jobIds) poll(jobId)
  await sleep(3_000)
  const sent = new Map<string, number>()
  const cancelsFailed = await cancelPaced(server.url, key, jobIds.slice(0, COMPLETIONS), sent)
  // Past the first herd of re-issues (LONG_POLL_WAIT after the opening) and their first answers.
  await sleep(Math.max(0, LONG_POLL_WAIT * 1000 + 5_000 - (performance.now() - start)))
  const rssMiBWhilePolling = rssMiB(server.pid)
  stopping = true
  agent.destroy()
  return {
    longPolls: jobIds.length,
    requests,
    refusals: Object.fromEntries(refusals),
    refused: [...refusals.values()].reduce((a, b) => a + b, 0),
    rssMiBWhilePolling,
    cancelsFailed,
    completion: latencies(sent, ended)
  }
}

const measureEngine = (label: string, start: (env: Record<string, string>) => Promise<RunningServer>) =>
  withDatabase("streams", async (url) => {
    const server = await start({ DATABASE_URL: url, WORKER_CONCURRENCY: "0" })
    try {
      const [key] = await makeAccounts(server.url, 1)
      log(`event_streams (${label}): submitting ${settings.streams + COMPLETIONS} jobs`)
      const jobIds = await submitJobs(server.url, key!, settings.streams + COMPLETIONS)
      await sleep(2_000)
      log(`event_streams (${label}): opening ${settings.streams} streams`)
      const sse = await streams(server, key!, jobIds.slice(0, settings.streams))
      await sleep(2_000)
      log(`event_streams (${label}): ${settings.streams} long-polls`)
      const polls = await longPolls(server, key!, jobIds.slice(COMPLETIONS, COMPLETIONS + settings.streams))
      return { sse, polls }
    } finally {
      await server.stop()
    }
  })

export const eventStreams = async () => {
  log(`event_streams: bare node:http holding ${settings.streams} responses`)
  const floor = await bare()
  const builds: Array<[string, (env: Record<string, string>) => Promise<RunningServer>]> = []
  const baseRoot = process.env.BENCH_EVENT_STREAMS_BASE
  if (baseRoot !== undefined && baseRoot !== "") builds.push([`base (${baseRoot})`, (env) => startBuiltServerAt(baseRoot, env)])
  builds.push(["this build", startBundledServer])
  const failures: Array<unknown> = []
  for (const [label, start] of builds) {
    let measured: Awaited<ReturnType<typeof measureEngine>>
    try {
      measured = await measureEngine(label, start)
    } catch (error) {
      // The other build is still measured; the figure fails at the end.
      log(`event_streams (${label}) failed: ${String(error)}`)
      failures.push(error)
      continue
    }
    const { polls, sse } = measured
    const common = { build: label, streams: settings.streams, store: "PostgreSQL", jobsFollowed: settings.streams }
    emit({
      figure: "event_streams_kib_per_stream",
      engine: sse.kibPerStream,
      reference: floor.kibPerStream,
      unit: "KiB",
      better: "lower",
      referenceIs: "bare node:http holding as many open responses (bench/bareServers/heldResponses.ts)",
      target: "<= 16 KiB a stream above the bare server's",
      params: { ...common, aboveBareKiB: round1(sse.kibPerStream - floor.kibPerStream), engine: sse, bare: floor }
    })
    emit({
      figure: "event_streams_idle_cpu",
      engine: sse.cpuPercent,
      reference: floor.cpuPercent,
      unit: "% of a core",
      better: "lower",
      referenceIs: "bare node:http holding as many open responses",
      target: "<= 5 % of a core, heartbeats included",
      params: { ...common, holdSeconds: HOLD_MS / 1000 }
    })
    emit({
      figure: "event_streams_completion_p99",
      engine: sse.completion.p99Ms,
      reference: 250,
      unit: "ms",
      better: "lower",
      referenceIs: "the issue's target",
      params: { ...common, ...sse.completion, completions: COMPLETIONS, perSecond: COMPLETIONS_PER_SECOND }
    })
    emit({
      figure: "long_polls_completion_p99",
      engine: polls.completion.p99Ms,
      reference: 1_000,
      unit: "ms",
      better: "lower",
      referenceIs: "the issue's target (and 0 refusals)",
      params: { ...common, ...polls, waitSeconds: LONG_POLL_WAIT, completions: COMPLETIONS, perSecond: COMPLETIONS_PER_SECOND }
    })
  }
  if (failures.length > 0) throw failures[0]
}
