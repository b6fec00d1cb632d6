import { Layer, References } from "effect"
import { DEMO_PROVIDER_ID, type Engine, makeDemoProvider, makeEngine } from "genjobs"
import { memoryFiles, memoryStore } from "genjobs/memory"
import { postgresStore } from "genjobs/postgres"
import { natsQueue } from "genjobs/nats"
import { redisQueue } from "genjobs/redis"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import pg from "pg"
import { afterEach, describe, expect, it } from "vitest"
import { readinessBody } from "../../src/http/readiness.js"
import { ADMIN_URL, freshPostgresUrl } from "../support/postgres.js"
import { natsServerAvailable, startNatsServer } from "../support/nats.js"
import { freePort, redisServerAvailable, startRedisServer } from "../support/redis.js"

const ORIGIN = "http://host.test"
const providers = { [DEMO_PROVIDER_ID]: makeDemoProvider() }
const files = () => memoryFiles({ publicUrl: ORIGIN })
// Failed checks are logged as warnings: keep this file's output to its results.
const quiet = { observability: Layer.succeed(References.MinimumLogLevel, "Error") }

const url = await freshPostgresUrl()

const started: Array<Engine> = []
afterEach(async () => {
  await Promise.all(started.splice(0).map((e) => e.dispose()))
})
const start = async (options: Parameters<typeof makeEngine>[0]) => {
  const engine = await makeEngine({ workers: 0, webhookDispatchers: 0, uploadSweeper: false, retentionSweeper: false, ...options })
  started.push(engine)
  return engine
}
const get = async (engine: Engine, path: string) => {
  const response = await engine.fetch(new Request(`${ORIGIN}${path}`))
  return { status: response.status, body: await response.json() as any }
}

describe("readinessBody", () => {
  it("is 200 only when every part is ok, and names each failing part", () => {
    expect(readinessBody({ store: "ok", queue: "ok" })).toEqual({ status: 200, body: { status: "ok", checks: { store: "ok", queue: "ok" } } })
    expect(readinessBody({ store: "timed out", queue: "ok" }).status).toBe(503)
    expect(readinessBody({ store: "failed", queue: "timed out" }).body).toEqual({
      status: "unavailable",
      failing: ["store", "queue"],
      checks: { store: "failed", queue: "timed out" }
    })
  })
})

describe("GET /health/ready", () => {
  it("answers 200 over the memory store, with the store checked and no broker to check", async () => {
    const engine = await start({ store: memoryStore(), files: files(), providers, ...quiet })
    expect(await get(engine, "/health/ready")).toEqual({ status: 200, body: { status: "ok", checks: { store: "ok" } } })
  })

  it.skipIf(url === undefined)("answers 503 naming the store once its PostgreSQL database is dropped; /health stays 200", async () => {
    const engine = await start({ store: postgresStore({ url: url! }), files: files(), providers, ...quiet })
    expect(await get(engine, "/health/ready")).toEqual({ status: 200, body: { status: "ok", checks: { store: "ok" } } })
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    try {
      await admin.query(`DROP DATABASE "${new URL(url!).pathname.slice(1)}" WITH (FORCE)`)
    } finally {
      await admin.end()
    }
    const ready = await get(engine, "/health/ready")
    expect(ready).toEqual({ status: 503, body: { status: "unavailable", failing: ["store"], checks: { store: "failed" } } })
    expect((await get(engine, "/health")).status).toBe(200)
  })

  it.skipIf(!redisServerAvailable())("answers 503 naming the queue while its Redis broker is down, 200 again once it is back", async () => {
    const port = await freePort()
    let redis = await startRedisServer(port)
    try {
      const engine = await start({ store: memoryStore(), files: files(), queue: redisQueue({ url: redis.url }), providers, ...quiet })
      expect(await get(engine, "/health/ready")).toEqual({ status: 200, body: { status: "ok", checks: { store: "ok", queue: "ok" } } })
      await redis.kill()
      expect(await get(engine, "/health/ready")).toEqual({
        status: 503,
        body: { status: "unavailable", failing: ["queue"], checks: { store: "ok", queue: "failed" } }
      })
      redis = await startRedisServer(port)
      let ready: Awaited<ReturnType<typeof get>> | undefined
      for (let i = 0; i < 100 && ready?.status !== 200; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 100))
        ready = await get(engine, "/health/ready")
      }
      expect(ready?.status).toBe(200)
    } finally {
      await redis.kill()
    }
  })

  it.skipIf(!natsServerAvailable())("answers 503 naming the queue while its NATS JetStream server is down", async () => {
    const dir = mkdtempSync(join(tmpdir(), "genjobs-ready-nats-"))
    const nats = await startNatsServer(await freePort(), dir)
    try {
      const engine = await start({ store: memoryStore(), files: files(), queue: natsQueue({ url: nats.url }), providers, ...quiet })
      expect(await get(engine, "/health/ready")).toEqual({ status: 200, body: { status: "ok", checks: { store: "ok", queue: "ok" } } })
      await nats.kill()
      expect(await get(engine, "/health/ready")).toMatchObject({ status: 503, body: { failing: ["queue"], checks: { store: "ok" } } })
    } finally {
      await nats.kill()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
