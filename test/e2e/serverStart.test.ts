/**
 * The bundled server's first day, built and run as a process (as `npm start` runs it): whether an empty store is
 * seeded with the demo account (SEED_DEMO), and a store it cannot open named with the
 * database's own reason.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { freshPostgresUrl } from "../support/postgres.js"
import { callServer, freePort, type RunningServer, startServer, tempDataDir } from "../support/serverProcess.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const MAIN = "dist/apps/server/main.js"
const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/
const ADMIN = "start-admin-token"
const SLOW = { timeout: 120_000 }

const servers: Array<RunningServer> = []
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop("SIGKILL")))
})
const start = async (env: Record<string, string>) => {
  const server = await startServer({ ADMIN_TOKEN: ADMIN, WORKER_CONCURRENCY: "0", ...env })
  servers.push(server)
  return server
}

/** A start expected to fail: its exit code and what it wrote. */
const failedStart = (env: Record<string, string>) =>
  freePort().then((port) =>
    new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN], {
        cwd: ROOT,
        env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: tempDataDir(), ...env },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (chunk) => (output += String(chunk)))
      child.stderr.on("data", (chunk) => (output += String(chunk)))
      child.once("exit", (code) => resolve({ code, output }))
    })
  )

const pgUrl = await freshPostgresUrl()

describe("SEED_DEMO", SLOW, () => {
  it("seeds the embedded SQLite store by default, and not when SEED_DEMO=false", async () => {
    const [seeded, empty] = await Promise.all([start({ DATA_DIR: tempDataDir() }), start({ DATA_DIR: tempDataDir(), SEED_DEMO: "false" })])
    expect(seeded.output).toMatch(KEY_PATTERN)
    expect(empty.output).not.toMatch(KEY_PATTERN)
    const accounts = await callServer(empty, "GET", "/admin/accounts", ADMIN)
    expect([accounts.status, accounts.body.accounts]).toEqual([200, []])
    const catalog = await callServer(empty, "GET", "/admin/catalog", ADMIN)
    expect([catalog.status, catalog.body.models]).toEqual([200, []])
  })

  it.skipIf(pgUrl === undefined)("leaves a PostgreSQL store empty by default; SEED_DEMO=true seeds it and prints the key", async () => {
    const empty = await start({ DATABASE_URL: pgUrl!, DATA_DIR: tempDataDir() })
    expect(empty.output).not.toMatch(KEY_PATTERN)
    expect((await callServer(empty, "GET", "/admin/accounts", ADMIN)).body.accounts).toEqual([])
    expect((await callServer(empty, "GET", "/admin/catalog", ADMIN)).body.models).toEqual([])
    await empty.stop()
    const seeded = await start({ DATABASE_URL: pgUrl!, DATA_DIR: tempDataDir(), SEED_DEMO: "true" })
    const key = KEY_PATTERN.exec(seeded.output)?.[0]
    expect(key).toBeDefined()
    const models = await callServer(seeded, "GET", "/v1/models", key!)
    expect([models.status, models.body.models.length > 0]).toEqual([200, true])
  })
})

describe.skipIf(pgUrl === undefined)("a DATABASE_URL the server cannot open", SLOW, () => {
  const base = new URL(pgUrl ?? "postgres://x")
  const variant = (change: (url: URL) => void) => {
    const url = new URL(base.href)
    change(url)
    return url.href
  }
  it.each([
    ["a database that does not exist", variant((u) => (u.pathname = "/genjobs_no_such_database")), /database "genjobs_no_such_database" does not exist \(3D000\)/],
    ["a role that does not exist", variant((u) => {
      u.username = "genjobs_no_such_role"
      u.password = "never-printed"
    }), /role "genjobs_no_such_role" does not exist \(28000\)/],
    ["a port nothing listens on", variant((u) => (u.port = "1")), /connect ECONNREFUSED 127\.0\.0\.1:1/]
  ])("%s: stops with PostgreSQL's own reason, on one line, without the password", async (_name, url, reason) => {
    const { code, output } = await failedStart({ DATABASE_URL: url })
    expect(code).toBe(1)
    const line = output.split("\n").find((l) => l.startsWith("genjobs: cannot open"))
    expect(line, output).toMatch(reason)
    expect(line).toContain(`@${new URL(url).host}${new URL(url).pathname}`)
    expect(output).not.toContain("never-printed")
    expect(output).not.toMatch(/^\s+at /m)
  })
})
