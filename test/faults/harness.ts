import { writeFileSync } from "node:fs"
import { createServer, type Server } from "node:https"
import { join } from "node:path"
import pg from "pg"
import { unlimitedDemoCatalog } from "../support/demoCatalog.js"
import { ADMIN_URL, freshPostgresUrl } from "../support/postgres.js"
import { type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"
import { selfSignedCertificate } from "../support/tls.js"
import { waitFor } from "../support/waitFor.js"

export const ADMIN_TOKEN = "fault-admin-token"
export const TEXT = "demo/text-gen/text-to-text"
/** One catalog credit (the text model's price) at the default CREDIT_MICRO_CENTS. */
export const JOB_COST = 10_000
/** The connection the suite reads the database with; fault injection never terminates it. */
const PROBE_APP = "genjobs fault probe"
/** PgJobSignal names its LISTEN connection so. */
const LISTENER_APP = "genjobs listener"

/** The suite's own connection to a test database: reads for the invariants, and the faults themselves. */
export interface FaultDb {
  readonly url: string
  readonly name: string
  query<R extends Record<string, any>>(text: string, params?: ReadonlyArray<unknown>): Promise<Array<R>>
  /** Terminates the servers' LISTEN connections, or all their connections (never the suite's own); answers how many. */
  terminate(which: "listener" | "all"): Promise<number>
  /** While set, the database refuses new connections (ALTER DATABASE ... ALLOW_CONNECTIONS): an outage. */
  refuseConnections(refuse: boolean): Promise<void>
  /** Closes the connection and drops the database (servers must be stopped first). */
  drop(): Promise<void>
}

/** One statement on the server's admin database (a database cannot change or drop itself). */
const onAdmin = async (statement: string) => {
  const admin = new pg.Client({ connectionString: ADMIN_URL, application_name: PROBE_APP })
  await admin.connect()
  try {
    await admin.query(statement)
  } finally {
    await admin.end()
  }
}

/** A fresh database of this run, or undefined when PostgreSQL is missing outside CI (see freshPostgresUrl). */
export const faultDatabase = async (): Promise<FaultDb | undefined> => {
  const url = await freshPostgresUrl()
  if (url === undefined) return undefined
  const name = new URL(url).pathname.slice(1)
  const client = new pg.Client({ connectionString: url, application_name: PROBE_APP })
  await client.connect()
  return {
    url,
    name,
    query: async (text, params = []) => (await client.query(text, [...params])).rows,
    terminate: async (which) => {
      const filter = which === "listener" ? "application_name = $2" : "$2::text IS NOT NULL"
      const rows = (await client.query(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND ${filter}`,
        [name, LISTENER_APP]
      )).rows
      return rows.filter((r) => r.ok).length
    },
    refuseConnections: (refuse) => onAdmin(`ALTER DATABASE ${pg.escapeIdentifier(name)} WITH ALLOW_CONNECTIONS ${!refuse}`),
    drop: async () => {
      await client.end().catch(() => undefined)
      await onAdmin(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)
    }
  }
}

export interface Reply {
  readonly status: number
  readonly body: any
  readonly retryAfter: string | null
}

/**
 * Every answer the suite got, by phase: the outage assertions read it. A request that never got
 * an answer (the process was killed) counts as status 0.
 */
export class Tally {
  readonly byPhase = new Map<string, Map<number, number>>()
  readonly serverErrors: Array<string> = []
  readonly unavailableWithoutRetryAfter: Array<string> = []
  phase = "start"

  record(reply: Reply, what: string) {
    const counts = this.byPhase.get(this.phase) ?? new Map<number, number>()
    counts.set(reply.status, (counts.get(reply.status) ?? 0) + 1)
    this.byPhase.set(this.phase, counts)
    if (reply.status >= 500 && reply.status !== 503) this.serverErrors.push(`${what} ${reply.status} ${JSON.stringify(reply.body)}`)
    if (reply.status === 503 && reply.retryAfter === null) this.unavailableWithoutRetryAfter.push(`${what} ${JSON.stringify(reply.body)}`)
  }

  count(status: number, phase?: string) {
    const phases = phase === undefined ? [...this.byPhase.values()] : [this.byPhase.get(phase) ?? new Map()]
    return phases.reduce((sum, counts) => sum + (counts.get(status) ?? 0), 0)
  }

  summary() {
    return Object.fromEntries([...this.byPhase].map(([phase, counts]) => [phase, Object.fromEntries(counts)]))
  }
}

/** The bundled server's HTTP API as the suite calls it, every answer tallied. */
export const call = async (
  tally: Tally,
  server: { readonly url: string },
  method: string,
  path: string,
  token: string,
  body?: unknown
): Promise<Reply> => {
  try {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // not JSON: kept as text for the report
    }
    const reply = { status: response.status, body: parsed, retryAfter: response.headers.get("retry-after") }
    tally.record(reply, `${method} ${path}`)
    return reply
  } catch (error) {
    const reply = { status: 0, body: String(error), retryAfter: null }
    tally.record(reply, `${method} ${path}`)
    return reply
  }
}

/** Stops every server it started, at the end of a file. */
export class Servers {
  readonly running: Array<RunningServer> = []
  readonly dataDir = tempDataDir()

  constructor(private readonly base: Record<string, string>) {}

  async start(env: Record<string, string> = {}) {
    const server = await startServer({ ...this.base, DATA_DIR: this.dataDir, ...env })
    this.running.push(server)
    return server
  }

  stopAll() {
    return Promise.all(this.running.map((s) => s.stop("SIGKILL")))
  }
}

/** Environment every fault-suite server shares: the database, the admin API, webhooks to the local receiver. */
export const baseEnv = (db: FaultDb, receiver: Receiver) => ({
  DATABASE_URL: db.url,
  ADMIN_TOKEN,
  WEBHOOK_ALLOW_PRIVATE: "true",
  NODE_EXTRA_CA_CERTS: receiver.caFile
})

/** An account with one key, made through the admin API; answers its id and key. */
export const makeTenant = async (
  tally: Tally,
  server: { readonly url: string },
  options: { readonly name: string; readonly creditsMicroCents: number; readonly maxConcurrentJobs?: number }
) => {
  const account = await call(tally, server, "POST", "/admin/accounts", ADMIN_TOKEN, options)
  if (account.status !== 201) throw new Error(`account not made: ${JSON.stringify(account.body)}`)
  const key = await call(tally, server, "POST", `/admin/accounts/${account.body.id}/keys`, ADMIN_TOKEN, { name: "k" })
  if (key.status !== 201) throw new Error(`key not made: ${JSON.stringify(key.body)}`)
  return { accountId: account.body.id as string, key: key.body.key as string }
}

export const installCatalog = async (tally: Tally, server: { readonly url: string }) => {
  // Without rate limits: the faults, not the per-minute windows, decide the answers.
  const reply = await call(tally, server, "PUT", "/admin/catalog", ADMIN_TOKEN, unlimitedDemoCatalog())
  if (reply.status !== 200) throw new Error(`catalog not installed: ${JSON.stringify(reply.body)}`)
}

/** Waits until no job in the database is pending or processing; answers whether that happened in time. */
export const settle = (db: FaultDb, ms: number) =>
  waitFor(async () => {
    const [row] = await db.query<{ n: string }>(
      "SELECT COUNT(*) AS n FROM genjobs_jobs WHERE status IN ('pending', 'processing')"
    )
    return Number(row!.n) === 0
  }, ms)

/** Waits until no webhook delivery is pending. */
export const deliveriesSettled = (db: FaultDb, ms: number) =>
  waitFor(async () => {
    const [row] = await db.query<{ n: string }>("SELECT COUNT(*) AS n FROM genjobs_webhook_deliveries WHERE status = 'pending'")
    return Number(row!.n) === 0
  }, ms)

export interface ReceivedWebhook {
  readonly path: string
  readonly deliveryId: string
  readonly attempt: string
  readonly jobId: string
  readonly status: string
  readonly at: number
}

/**
 * An HTTPS webhook receiver: `/ok` answers 204, `/trickle` answers 200 and then a byte every
 * 50 ms without ever ending (its socket is never idle), `/flaky` answers 503 while `flakyDown`
 * is set and 204 after. Every request is recorded.
 */
export interface Receiver {
  readonly url: string
  readonly caFile: string
  readonly received: Array<ReceivedWebhook>
  flakyDown: boolean
  openTrickles: number
  mostTrickles: number
  close(): Promise<void>
}

export const startReceiver = async (): Promise<Receiver> => {
  const tls = selfSignedCertificate()
  const caFile = join(tempDataDir(), "receiver-ca.pem")
  writeFileSync(caFile, tls.cert)
  const state = { flakyDown: false, openTrickles: 0, mostTrickles: 0 }
  const received: Array<ReceivedWebhook> = []
  const server: Server = createServer(tls, (req, res) => {
    let body = ""
    req.on("data", (chunk) => (body += chunk))
    req.on("end", () => {
      let payload: { jobId?: string; status?: string } = {}
      try {
        payload = JSON.parse(body)
      } catch {
        // recorded without a job
      }
      const path = req.url ?? ""
      received.push({
        path,
        deliveryId: String(req.headers["x-webhook-delivery-id"]),
        attempt: String(req.headers["x-webhook-attempt"]),
        jobId: payload.jobId ?? "",
        status: payload.status ?? "",
        at: Date.now()
      })
      if (path === "/trickle") {
        state.mostTrickles = Math.max(state.mostTrickles, ++state.openTrickles)
        res.writeHead(200, { "content-type": "text/plain" })
        const timer = setInterval(() => res.write("."), 50)
        res.on("close", () => {
          clearInterval(timer)
          state.openTrickles--
        })
        return
      }
      if (path === "/flaky" && state.flakyDown) return void res.writeHead(503).end()
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`
  return Object.assign(state, {
    url,
    caFile,
    received,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }) as Receiver
}

/** Percentile of a sample (nearest rank); NaN when empty. */
export const percentile = (values: ReadonlyArray<number>, p: number) => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
