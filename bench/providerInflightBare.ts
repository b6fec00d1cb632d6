/**
 * The reference of the provider_inflight figure: a bare undici poll loop in a process of its
 * own, against the same Replicate simulator. On "go" it creates BENCH_CONCURRENCY predictions
 * (at most 64 requests at once, one keep-alive pool of 64 connections, as the engine's provider
 * HTTP layer keeps), then, once all are created, polls each every BENCH_POLL_MS (the first poll
 * spread over one interval, then the engine's ±10 % jitter, one timer per prediction) until it
 * ends. It reports its CPU time, RSS, the polls it sent and the
 * predictions ended to the parent every 500 ms, as the engine's worker does, no store, no
 * engine: what one poll costs at the floor of Node and undici.
 */
import { monitorEventLoopDelay } from "node:perf_hooks"
import { Agent, request } from "undici"
import { serveParent } from "./lib/child.js"

export interface BareCounts {
  readonly type: "bare"
  readonly polls: number
  readonly ended: number
  readonly created: number
  readonly cpuMicros: number
  readonly rss: number
  readonly loopDelayP99Ms: number
}

const simUrl = process.env.BENCH_SIM_URL!
const token = process.env.BENCH_SIM_TOKEN!
const jobs = Number(process.env.BENCH_CONCURRENCY)
const pollMs = Number(process.env.BENCH_POLL_MS)
const pool = new Agent({ connections: 64, keepAliveTimeout: 30_000, keepAliveMaxTimeout: 30_000 })
const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
const TERMINAL = new Set(["succeeded", "failed", "canceled"])

const loopDelay = monitorEventLoopDelay({ resolution: 10 })
loopDelay.enable()
let polls = 0
let ended = 0
let created = 0

const report = () => {
  const cpu = process.cpuUsage()
  process.send!({
    type: "bare",
    polls,
    ended,
    created,
    cpuMicros: cpu.user + cpu.system,
    rss: process.memoryUsage.rss(),
    loopDelayP99Ms: loopDelay.percentile(99) / 1e6
  } satisfies BareCounts)
  loopDelay.reset()
}
setInterval(report, 500).unref()

const call = async (method: "GET" | "POST", path: string, body?: unknown) => {
  const answer = await request(`${simUrl}${path}`, {
    method,
    headers,
    dispatcher: pool,
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return (await answer.body.json()) as { readonly id: string; readonly status: string }
}

const jittered = () => Math.round(pollMs * (1 + 0.1 * (2 * Math.random() - 1)))

/** Polls the prediction every interval until it ends, the first poll within one interval (the steady state's spread). */
const follow = (id: string) => {
  const poll = () => {
    polls++
    call("GET", `/v1/predictions/${id}`).then(
      (p) => (TERMINAL.has(p.status) ? ended++ : setTimeout(poll, jittered())),
      () => setTimeout(poll, jittered())
    )
  }
  setTimeout(poll, Math.round(Math.random() * pollMs))
}

/** Creates every prediction first, then polls them all: polls queued in the pool would otherwise starve the creates. */
const createAll = async () => {
  let next = 0
  const ids: Array<string> = []
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (next < jobs) {
      const i = next++
      const p = await call("POST", "/v1/predictions", { version: "0".repeat(64), input: { prompt: `bare ${i}` } })
      created++
      ids.push(p.id)
    }
  }))
  for (const id of ids) follow(id)
}

serveParent({
  start: async () => {
    report()
    void createAll()
  },
  stop: async () => {
    await pool.close()
  }
})
