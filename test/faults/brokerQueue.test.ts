import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { postgresAvailable } from "../support/postgres.js"
import { isRunning, type RunningServer } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"
import {
  baseEnv,
  call,
  deliveriesSettled,
  faultDatabase,
  type FaultDb,
  installCatalog,
  makeTenant,
  percentile,
  type Receiver,
  Servers,
  settle,
  sleep,
  startReceiver,
  Tally,
  TEXT
} from "./harness.js"
import { checkInvariants } from "./invariants.js"
import { brokerAvailable, type BrokerKind, type PrivateBroker, startBroker } from "./support/brokers.js"

/**
 * The engine on a queue broker (QUEUE_URL: a private redis-server / nats-server of each
 * scenario, on a port of its own) with its faults: the broker killed and restarted under load, a
 * worker killed mid-job, messages delivered twice, and jobs committed but never published.
 * Shortened through configuration: JOB_LEASE_MS 2 s (deliveries held 3 s), QUEUE_RELAY_GRACE_MS
 * 1 s. The relay's pass runs every reaper interval (5 s, not configurable), so "relayed" means
 * within grace + 5 s.
 */

// Under CI each of these throws when missing: the file fails rather than passing by skipping.
const pgUp = await postgresAvailable()
const KINDS: ReadonlyArray<BrokerKind> = ["redis", "nats"]
const binaries: Record<BrokerKind, boolean> = { redis: await brokerAvailable("redis"), nats: await brokerAvailable("nats") }

const LEASE_MS = 2_000
const GRACE_MS = 1_000
/** The relay's pass interval: the engine's reaper interval, 5 s by default (no setting for it). */
const RELAY_PASS_MS = 5_000

const RELAY_LINE = "the queue relay published jobs again that the broker had not delivered in time"
const PUBLISH_FAILED_LINE = "a submitted job could not be published to the queue; the relay publishes it later"
/** What each adapter logs when its connection drops, and when it is back. */
const LINK_LINES: Record<BrokerKind, { readonly lost: RegExp; readonly back: RegExp }> = {
  redis: { lost: /Redis queue: [^"]*connection failed/, back: /Redis queue: [^"]*connection restored/ },
  nats: { lost: /NATS queue: connection lost/, back: /NATS queue: connection restored/ }
}

/** The JSON log lines a server printed (LOG_FORMAT=json). */
const logLines = (output: string): Array<Record<string, unknown>> =>
  output.split("\n").flatMap((line) => {
    try {
      const parsed: unknown = JSON.parse(line)
      return parsed !== null && typeof parsed === "object" ? [parsed as Record<string, unknown>] : []
    } catch {
      return []
    }
  })

/** Jobs the relay published again, as its log lines count them (pending and expired leases). */
const relayedIn = (output: string) =>
  logLines(output)
    .filter((line) => line["msg"] === RELAY_LINE)
    .reduce((n, line) => n + Number(line["pending"] ?? 0) + Number(line["expiredLeases"] ?? 0), 0)

/**
 * When each job's first run began, by the worker's "job started" log line: its own clock right
 * after the claim. Not the row's started_at: a claim from a broker delivery stamps it with the
 * time read before its receive began to wait, up to the poll interval earlier.
 */
const startedIn = (...outputs: ReadonlyArray<string>) => {
  const started = new Map<string, number>()
  for (const line of outputs.flatMap(logLines)) {
    const jobId = line["jobId"]
    if (line["msg"] === "job started" && typeof jobId === "string" && !started.has(jobId)) started.set(jobId, Date.parse(String(line["time"])))
  }
  return started
}

interface JobRow {
  id: string
  status: string
  attempts: number
  created_at: string
  started_at: string | null
  completed_at: string | null
  provider_phase: string | null
  provider_handle: string | null
  provider_starts: string
}

/** One scenario's world: a fresh database, a private broker, its server processes, its answers. */
interface Scenario {
  readonly db: FaultDb
  readonly broker: PrivateBroker
  readonly tally: Tally
  /** A bundled server with `workers` runners; on the broker unless `queue` is false (the store's own queue: it never publishes). */
  start(workers: number, queue?: boolean): Promise<RunningServer>
  readonly servers: Servers
  jobs(ids?: ReadonlyArray<string>): Promise<Array<JobRow>>
  close(): Promise<void>
}

const openScenario = async (kind: BrokerKind, receiver: Receiver): Promise<Scenario> => {
  const db = (await faultDatabase())!
  const broker = await startBroker(kind).catch(async (error: unknown) => {
    await db.drop()
    throw error
  })
  const servers = new Servers({
    ...baseEnv(db, receiver),
    JOB_LEASE_MS: String(LEASE_MS),
    QUEUE_RELAY_GRACE_MS: String(GRACE_MS),
    LOG_FORMAT: "json"
  })
  return {
    db,
    broker,
    tally: new Tally(),
    servers,
    start: (workers, queue = true) => servers.start({ WORKER_CONCURRENCY: String(workers), ...(queue ? { QUEUE_URL: broker.url } : {}) }),
    jobs: (ids) =>
      db.query<JobRow>(
        `SELECT id, status, attempts, created_at, started_at, completed_at, provider_phase, provider_handle, provider_starts
         FROM genjobs_jobs ${ids === undefined ? "" : "WHERE id = ANY($1)"} ORDER BY created_at, id`,
        ids === undefined ? [] : [ids]
      ),
    close: async () => {
      await servers.stopAll()
      await broker.close()
      await db.drop()
    }
  }
}

interface Sent {
  readonly phase: string
  readonly at: number
  jobId?: string
  answeredAt?: number
}

/**
 * A steady submit load: one every 100 ms (fewer while 8 are unanswered), jobs of 0 to 300 ms,
 * each tallied under the phase current when it was sent.
 */
const startLoad = (s: Scenario, api: RunningServer, key: string) => {
  const sent: Array<Sent> = []
  let inFlight = 0
  let n = 0
  const pending = new Set<Promise<void>>()
  const one = async () => {
    inFlight++
    const entry: Sent = { phase: s.tally.phase, at: Date.now() }
    sent.push(entry)
    const i = n++
    const reply = await call(s.tally, api, "POST", "/v1/jobs/submit", key, { model: TEXT, input: { prompt: `load ${i}`, demoDelayMs: (i % 4) * 100 } })
    if (reply.status === 200) {
      entry.jobId = reply.body.jobId
      entry.answeredAt = Date.now()
    }
    inFlight--
  }
  const timer = setInterval(() => {
    if (inFlight >= 8) return
    const p = one()
    pending.add(p)
    void p.finally(() => pending.delete(p))
  }, 100)
  return {
    sent,
    stop: async () => {
      clearInterval(timer)
      await Promise.all(pending)
    }
  }
}

const submitAll = async (s: Scenario, api: RunningServer, key: string, count: number, input: Record<string, unknown>, webhookUrl?: string) => {
  const ids: Array<string> = []
  for (let i = 0; i < count; i++) {
    const reply = await call(s.tally, api, "POST", "/v1/jobs/submit", key, {
      model: TEXT,
      input: { prompt: `job ${i}`, ...input },
      ...(webhookUrl === undefined ? {} : { webhookUrl })
    })
    expect(reply.status, JSON.stringify(reply.body)).toBe(200)
    ids.push(reply.body.jobId)
  }
  return ids
}

const tenantOf = async (s: Scenario, server: RunningServer) => {
  await installCatalog(s.tally, server)
  return makeTenant(s.tally, server, { name: "t", creditsMicroCents: 1_000_000_000, maxConcurrentJobs: 1_000 })
}

// One HTTPS webhook receiver for the file (the servers trust its certificate through NODE_EXTRA_CA_CERTS).
let receiver: Receiver | undefined
beforeAll(async () => {
  if (pgUp) receiver = await startReceiver()
})
afterAll(async () => {
  await receiver?.close()
})

for (const kind of KINDS) {
  describe.skipIf(!pgUp || !binaries[kind])(`${kind} queue broker (QUEUE_URL=${kind}://...)`, () => {
    const scenario = async (body: (s: Scenario) => Promise<void>) => {
      const s = await openScenario(kind, receiver!)
      try {
        await body(s)
      } finally {
        await s.close()
      }
    }

    it("broker SIGKILLed and restarted under a submit load: every 200 ends once, completed; the outage's jobs relayed", () =>
      scenario(async (s) => {
        const api = await s.start(0)
        const worker = await s.start(4)
        const { key } = await tenantOf(s, api)
        s.tally.phase = "before"
        const load = startLoad(s, api, key)
        await sleep(1_000)

        s.tally.phase = "broker down"
        await s.broker.kill()
        const killedAt = Date.now()
        // Submits go on for 2 s without a broker: stored and charged, their publish fails.
        await sleep(2_000)
        await s.broker.restart()
        const restartedAt = Date.now()
        s.tally.phase = "reconnecting"
        // Both processes say their connection is back (Redis: a new, empty server; NATS: its store kept).
        const reconnected = await waitFor(() => LINK_LINES[kind].back.test(api.output) && LINK_LINES[kind].back.test(worker.output), 15_000)
        const reconnectedAt = Date.now()
        s.tally.phase = "returned"
        await sleep(1_000)
        await load.stop()
        const settled = await settle(s.db, 30_000)
        const settledAt = Date.now()
        const drained = await waitFor(async () => (await s.broker.backlog()) === 0, 15_000)
        // The broker carries submits again: a job submitted now is picked up sooner than the
        // relay could bring it (it publishes only jobs pending for the grace).
        s.tally.phase = "probes"
        const probes: Array<{ id: string; answeredAt: number }> = []
        for (let i = 0; i < 3; i++) {
          const [id] = await submitAll(s, api, key, 1, { demoDelayMs: 0 })
          probes.push({ id: id!, answeredAt: Date.now() })
        }
        expect(await settle(s.db, 10_000)).toBe(true)

        const accepted = [...load.sent.flatMap((e) => (e.jobId === undefined ? [] : [e.jobId])), ...probes.map((p) => p.id)]
        const rows = new Map((await s.jobs()).map((r) => [r.id, r]))
        const ofPhase = (phase: string) => load.sent.filter((e) => e.phase === phase && e.jobId !== undefined)
        const outageJobs = ofPhase("broker down").map((e) => rows.get(e.jobId!)!)
        const outageDoneMs = Math.max(...outageJobs.map((r) => Number(r.completed_at))) - restartedAt
        const startedAt = startedIn(worker.output)
        const pickupsOf = (phase: string) => ofPhase(phase).map((e) => Math.max(0, startedAt.get(e.jobId!)! - e.answeredAt!))
        const returnedPickups = pickupsOf("returned")
        const beforePickups = pickupsOf("before")
        // How long a submit took to answer while the broker was away (its publish failing or waiting).
        const latency = (phase: string) => Math.max(0, ...ofPhase(phase).map((e) => e.answeredAt! - e.at))
        const probePickups = probes.map((p) => Math.max(0, startedAt.get(p.id)! - p.answeredAt))
        // Rows whose started_at is earlier than their own submit: a broker claim stamps the time
        // read before its receive began to wait (reported; see startedIn).
        const stampedEarly = [...rows.values()].filter((r) => Number(r.started_at) < Number(r.created_at)).length
        const report = await checkInvariants(s.db, { accepted, unconfirmed: [], tally: s.tally })
        const relayed = relayedIn(worker.output)

        console.log([
          `[fault] ${kind} broker SIGKILL under load: ${load.sent.length} submitted, ${accepted.length} answered 200, ` +
          `${report.byStatus["completed"] ?? 0} completed (${JSON.stringify(report.byStatus)}), claimed more than once: ${report.reclaimed}`,
          `  broker down ${restartedAt - killedAt} ms (${ofPhase("broker down").length} submits then, all 200), ` +
          `${relayed} jobs relayed (worker log), API publish failures logged: ${api.output.split(PUBLISH_FAILED_LINE).length - 1}; ` +
          `slowest submit answer ${latency("before")} ms before, ${latency("broker down")} ms while down, ${latency("reconnecting")} ms reconnecting`,
          `  after the restart: both reconnected in ${reconnectedAt - restartedAt} ms; the outage's jobs done ${outageDoneMs} ms after it; ` +
          `settled ${settledAt - restartedAt} ms after it; messages left: ${await s.broker.backlog()} undelivered or unacked, ${await s.broker.stranded()} stranded in the stream`,
          `  pickup ms: before the kill p50=${percentile(beforePickups, 50)} max=${Math.max(...beforePickups)}; ` +
          `submitted after the reconnection (behind the relayed backlog) p50=${percentile(returnedPickups, 50)} max=${Math.max(...returnedPickups)}; ` +
          `probes after the drain ${probePickups.join(", ")} (by the worker's log; ${stampedEarly} of ${rows.size} rows have started_at before created_at)`,
          `  answers ${JSON.stringify(s.tally.summary())}`
        ].join("\n"))

        expect(reconnected).toBe(true)
        expect(settled).toBe(true)
        expect(report.violations).toEqual([])
        expect(report.byStatus).toEqual({ completed: accepted.length })
        // Every submit answered 200, the broker up or down (the reconnecting phase may be too short to have any).
        for (const phase of ["before", "broker down", "returned"]) expect(Object.keys(s.tally.summary()[phase] ?? {}), phase).toEqual(["200"])
        expect(Object.keys(s.tally.summary()["reconnecting"] ?? { 200: 0 })).toEqual(["200"])
        expect(s.tally.count(0)).toBe(0)
        // Never a hang: a publish that cannot reach the broker gives up within the adapters' 5 s timeout.
        expect(Math.max(latency("broker down"), latency("reconnecting"))).toBeLessThan(6_000)
        expect(outageJobs.length).toBeGreaterThan(0)
        // The outage's jobs were never published by their submit: the relay did, once the broker was back.
        expect(api.output).toContain(PUBLISH_FAILED_LINE)
        expect(relayed).toBeGreaterThanOrEqual(1)
        // Relayed by the first pass that finds the broker back and the job past its grace: at worst
        // a pass meeting the broker still down, then one or two more.
        expect(outageDoneMs).toBeLessThan(GRACE_MS + 3 * RELAY_PASS_MS)
        // The failure and the return are in both processes' logs.
        expect(api.output).toMatch(LINK_LINES[kind].lost)
        expect(worker.output).toMatch(LINK_LINES[kind].lost)
        // Jobs submitted after the return ran, and the broker (not the relay) carries new ones again.
        expect(returnedPickups.length).toBeGreaterThan(0)
        expect(Math.max(...probePickups)).toBeLessThan(GRACE_MS)
        // Every message delivered and acked in the end: nothing left for the workers.
        expect(drained).toBe(true)
        // No process died or was restarted.
        expect(isRunning(api.child) && isRunning(worker.child)).toBe(true)
      }))

    // Three server processes started one after another: over a minute on a busy machine.
    it("a worker killed mid-job: the other worker takes the delivery over and follows the same generation to one end", () =>
      scenario(async (s) => {
        // Only what this scenario's servers sent (the receiver is the file's).
        const from = receiver!.received.length
        const received = () => receiver!.received.slice(from)
        const api = await s.start(0)
        const doomed = await s.start(2)
        const { key } = await tenantOf(s, api)
        const DELAY = 5_000
        const ids = await submitAll(s, api, key, 2, { demoDelayMs: DELAY }, `${receiver!.url}/ok`)
        // Both generations started at the demo provider, their handles committed, on the doomed worker.
        const started = async () => (await s.jobs(ids)).every((r) => r.status === "processing" && r.provider_phase === "started")
        expect(await waitFor(started, 10_000)).toBe(true)
        // Killed as soon as both have started, and only then the survivor started: a process
        // takes seconds to start on a busy machine, and killing after it came up let the doomed
        // worker end its jobs first, or lose its 2 s lease to the survivor while still alive.
        const killedAt = Date.now()
        await doomed.stop("SIGKILL")
        const mid = await s.jobs(ids)
        expect(mid.every((r) => r.status === "processing" && r.attempts === 1), JSON.stringify(mid)).toBe(true)
        const survivor = await s.start(2)

        // The second claim (attempts 2), as the broker redelivers after the visibility (1.5 leases).
        const takenAt = new Map<string, number>()
        await waitFor(async () => {
          for (const row of await s.jobs(ids)) if (row.attempts >= 2 && !takenAt.has(row.id)) takenAt.set(row.id, Date.now() - killedAt)
          return takenAt.size === ids.length
        }, 30_000)
        expect(await settle(s.db, 20_000)).toBe(true)
        expect(await deliveriesSettled(s.db, 10_000)).toBe(true)

        const rows = await s.jobs(ids)
        const report = await checkInvariants(s.db, { accepted: ids, unconfirmed: [], tally: s.tally, received: received() })
        console.log(
          `[fault] ${kind} worker SIGKILL mid-job: ${ids.length} jobs of ${DELAY} ms orphaned; taken over ${
            [...takenAt.values()].join(", ")
          } ms after the kill (lease ${LEASE_MS} ms, visibility ${LEASE_MS * 1.5} ms); ended ${
            rows.map((r) => `${r.status} ${Number(r.completed_at) - killedAt} ms after the kill`).join(", ")
          }; ${JSON.stringify(report.byStatus)}`
        )
        expect(report.violations).toEqual([])
        // The demo provider on take-over: the handle was committed, so the new holder polls it
        // (no second start, no recover, no refund) and the generation ends when it was due.
        for (const row of rows) {
          expect(row.status).toBe("completed")
          expect(row.attempts).toBe(2)
          expect(Number(row.provider_starts)).toBe(1)
          expect(row.provider_phase).toBe("started")
          const dueAt = JSON.parse(row.provider_handle!).data.dueAt as number
          expect(dueAt).toBe(Number(row.started_at) + DELAY)
          expect(Number(row.completed_at)).toBeGreaterThanOrEqual(dueAt)
        }
        expect(takenAt.size).toBe(ids.length)
        const delivered = received().filter((r) => ids.includes(r.jobId))
        expect(delivered.map((r) => `${r.jobId} ${r.status}`).sort()).toEqual(ids.map((id) => `${id} completed`).sort())
        expect(isRunning(api.child) && isRunning(survivor.child)).toBe(true)
      }), 180_000)

    it("every job's id delivered again while it runs: each provider run once (attempts 1, one start), all completed", () =>
      scenario(async (s) => {
        // Only what this scenario's servers sent (the receiver is the file's).
        const from = receiver!.received.length
        const received = () => receiver!.received.slice(from)
        const api = await s.start(0)
        const workers = await Promise.all([s.start(3), s.start(3)])
        const { accountId, key } = await tenantOf(s, api)
        const ids = await submitAll(s, api, key, 8, { demoDelayMs: 3_000 }, `${receiver!.url}/ok`)
        const submittedAt = Date.now()
        const processing = async () => (await s.jobs(ids)).filter((r) => r.status === "processing").length
        expect(await waitFor(async () => (await processing()) === 6, 10_000)).toBe(true)
        // NATS stores an id published again within its 1 s duplicate window once: publish after it.
        await sleep(Math.max(0, submittedAt + 1_100 - Date.now()))
        const storedBefore = await s.broker.stored()
        await s.broker.publish(ids, accountId)
        await sleep(1_100)
        await s.broker.publish(ids, accountId)
        const storedAfter = await s.broker.stored()
        const runningThen = await processing()

        expect(await settle(s.db, 20_000)).toBe(true)
        expect(await deliveriesSettled(s.db, 10_000)).toBe(true)
        // Each duplicate was delivered and acked (both adapters delete a message on its ack).
        const drained = await waitFor(async () => (await s.broker.backlog()) === 0, 15_000)
        const rows = await s.jobs(ids)
        const report = await checkInvariants(s.db, { accepted: ids, unconfirmed: [], tally: s.tally, received: received() })
        console.log(
          `[fault] ${kind} duplicate deliveries: ${ids.length} jobs, each id published twice more (${storedAfter - storedBefore} messages stored, ` +
          `${runningThen} jobs running then); attempts ${JSON.stringify(rows.map((r) => r.attempts))}, provider starts ${
            JSON.stringify(rows.map((r) => Number(r.provider_starts)))
          }; broker backlog drained: ${drained}; ${JSON.stringify(report.byStatus)}`
        )
        expect(storedAfter - storedBefore).toBeGreaterThanOrEqual(2 * ids.length)
        expect(runningThen).toBeGreaterThan(0)
        expect(report.violations).toEqual([])
        for (const row of rows) {
          expect(row.status).toBe("completed")
          expect(row.attempts).toBe(1)
          expect(Number(row.provider_starts)).toBe(1)
        }
        expect(drained).toBe(true)
        const delivered = received().filter((r) => ids.includes(r.jobId))
        expect(delivered.map((r) => `${r.jobId} ${r.status}`).sort()).toEqual(ids.map((id) => `${id} completed`).sort())
        expect([api, ...workers].every((p) => isRunning(p.child))).toBe(true)
      }))

    it("jobs committed and never published (the submitting process has no broker): the relay publishes them within grace + a pass", () =>
      scenario(async (s) => {
        const worker = await s.start(4)
        // The same database without QUEUE_URL: its submits commit and publish nothing, as a
        // process killed between its commit and its publish would leave them.
        const unpublished = await s.start(0, false)
        const { key } = await tenantOf(s, unpublished)
        const backlogBefore = await s.broker.backlog()
        const ids = await submitAll(s, unpublished, key, 6, { demoDelayMs: 100 })
        const submittedAt = Date.now()
        const deadline = GRACE_MS + RELAY_PASS_MS + 6_000
        const settled = await settle(s.db, deadline)
        const settledMs = Date.now() - submittedAt

        const rows = await s.jobs(ids)
        const report = await checkInvariants(s.db, { accepted: ids, unconfirmed: [], tally: s.tally })
        const startedAt = startedIn(worker.output)
        const waits = rows.map((r) => startedAt.get(r.id)! - Number(r.created_at))
        const ends = rows.map((r) => Number(r.completed_at) - Number(r.created_at))
        console.log(
          `[fault] ${kind} commit without publish: ${ids.length} jobs never published; settled ${settledMs} ms after the last submit; ` +
          `submit to claim ${Math.min(...waits)}-${Math.max(...waits)} ms, to completion max ${Math.max(...ends)} ms ` +
          `(grace ${GRACE_MS} ms, relay pass ${RELAY_PASS_MS} ms); ${relayedIn(worker.output)} jobs relayed (worker log); ${JSON.stringify(report.byStatus)}`
        )
        expect(backlogBefore).toBe(0)
        expect(settled).toBe(true)
        expect(report.violations).toEqual([])
        expect(report.byStatus).toEqual({ completed: ids.length })
        for (const row of rows) expect(row.attempts).toBe(1)
        // Nothing but the relay brought them: none claimed, nor completed, before its grace had passed.
        expect(Math.min(...waits)).toBeGreaterThanOrEqual(GRACE_MS)
        expect(Math.min(...ends)).toBeGreaterThanOrEqual(GRACE_MS)
        expect(Math.max(...ends)).toBeLessThan(deadline)
        expect(relayedIn(worker.output)).toBeGreaterThanOrEqual(ids.length)
        expect(unpublished.output).not.toContain(PUBLISH_FAILED_LINE)
        expect(isRunning(worker.child) && isRunning(unpublished.child)).toBe(true)
      }))
  })
}
