import { Redacted } from "effect"
import { type AddressInfo, createServer, type Server, type Socket, connect } from "node:net"
import Pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerPostgres } from "../../adapters/sql/postgres.js"
import { type HttpEngine, makeHttpEngine } from "../support/httpEngine.js"
import { freshPostgresUrl } from "../support/postgres.js"

const IMAGE = "demo/image-gen/text-to-image"
const STORE_TIMEOUT_MS = 1_000
// What an answer may take beyond the bound on a busy 2-core machine.
const MARGIN_MS = 2_500

/**
 * A TCP proxy to PostgreSQL that can stop passing bytes, as a network partition or a frozen
 * server does: while paused, what either side sends is held. A side that closes takes the
 * other down and drops what was held, so a statement held here never reaches the server.
 */
const pausableProxy = async (target: { host: string; port: number }) => {
  let paused = false
  const flushes = new Set<() => void>()
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host)
    const held: Array<{ to: Socket; data: Buffer }> = []
    const pass = (to: Socket) => (data: Buffer) => (paused ? held.push({ to, data }) : to.write(data))
    const flush = () => {
      for (const { to, data } of held.splice(0)) to.write(data)
    }
    flushes.add(flush)
    const close = () => {
      held.length = 0
      flushes.delete(flush)
      client.destroy()
      upstream.destroy()
    }
    client.on("data", pass(upstream))
    upstream.on("data", pass(client))
    for (const socket of [client, upstream]) {
      socket.on("close", close)
      socket.on("error", close)
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as AddressInfo).port,
    pause: () => void (paused = true),
    resume: () => {
      paused = false
      for (const flush of flushes) flush()
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const postgresUrl = await freshPostgresUrl()
if (postgresUrl === undefined) {
  describe.skip("a store that does not answer (PostgreSQL not reachable)", () => {
    it("runs", () => undefined)
  })
} else {
  describe("a store that does not answer within STORE_TIMEOUT_MS", () => {
    const direct = new URL(postgresUrl)
    let proxy: Awaited<ReturnType<typeof pausableProxy>>
    let engine: HttpEngine
    let key: string
    const count = async (table: string) => {
      const client = new Pg.Client({ connectionString: postgresUrl })
      await client.connect()
      try {
        return Number((await client.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n)
      } finally {
        await client.end()
      }
    }

    beforeAll(async () => {
      proxy = await pausableProxy({ host: direct.hostname, port: Number(direct.port || 5432) })
      const proxied = new URL(postgresUrl)
      proxied.hostname = "127.0.0.1"
      proxied.port = String(proxy.port)
      engine = await makeHttpEngine({}, {
        stores: layerPostgres({ url: Redacted.make(proxied.toString()), storeTimeoutMs: STORE_TIMEOUT_MS })
      })
      key = (await engine.account()).key
    })
    afterAll(async () => {
      proxy?.resume()
      await engine?.dispose()
      await proxy?.close()
    })

    const timed = async <A>(run: () => Promise<A>) => {
      const started = Date.now()
      const value = await run()
      return { value, ms: Date.now() - started }
    }

    it("answers 503 with Retry-After within the bound, writes nothing, and serves again once the store answers", async () => {
      const accounts = await count("genjobs_accounts")
      const jobs = await count("genjobs_jobs")
      proxy.pause()
      const created = await timed(() => engine.admin("POST", "/admin/accounts", { name: "during the freeze" }))
      expect([created.value.status, created.value.body.error.code]).toEqual([503, "SERVICE_UNAVAILABLE"])
      expect(Number(created.value.headers.get("retry-after"))).toBeGreaterThan(0)
      expect(created.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS)

      const submitted = await timed(() => engine.withKey(key).post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "x" } }))
      expect([submitted.value.status, submitted.value.body.error.code]).toEqual([503, "PUBSUB_PUBLISH_FAILED"])
      expect(Number(submitted.value.headers.get("retry-after"))).toBeGreaterThan(0)
      expect(submitted.ms).toBeLessThan(STORE_TIMEOUT_MS + MARGIN_MS)

      proxy.resume()
      // The connections that timed out were closed with what they held: nothing reached the database.
      expect(await count("genjobs_accounts")).toBe(accounts)
      expect(await count("genjobs_jobs")).toBe(jobs)
      const after = await engine.withKey(key).post("/v1/jobs/submit", { model: IMAGE, input: { prompt: "y" } })
      expect(after.status).toBe(200)
      expect(await count("genjobs_jobs")).toBe(jobs + 1)
    })
  })
}
