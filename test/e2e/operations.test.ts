import { spawn } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { freePort, startServer, tempDataDir } from "../support/serverProcess.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/
const ADMIN = "operations-admin-token"
const METRICS = "operations-metrics-token"

const listen = (port: number) =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve(server))
  })
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()))
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8)

const waitFor = async <A>(what: string, probe: () => Promise<A | undefined>, ms = 20_000): Promise<A> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const found = await probe().catch(() => undefined)
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe("the bundled server as operators run it", () => {
  it("`npm start` passes SIGTERM to the server: it drains, exits and frees the port", async () => {
    const port = await freePort()
    const dataDir = join(tempDataDir(), "data")
    const npm = spawn("npm", ["start", "--silent"], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    npm.stdout!.on("data", (chunk) => (output += String(chunk)))
    npm.stderr!.on("data", (chunk) => (output += String(chunk)))
    const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)))
    try {
      await waitFor("the server", async () => ((await fetch(`http://127.0.0.1:${port}/health`)).ok ? true : undefined), 60_000)
      npm.kill("SIGTERM")
      expect(await exited).toBe(0)
      // Nothing listens any more: the server went with npm, it was not left behind as an orphan.
      await close(await listen(port))
      expect(output).toContain("genjobs stopped")
    } finally {
      if (npm.exitCode === null) npm.kill("SIGKILL")
    }
  }, 90_000)

  it("a taken port stops the start with one line on stderr, before printing or creating anything", async () => {
    const port = await freePort()
    const taken = await listen(port)
    const dataDir = join(tempDataDir(), "data")
    try {
      const child = spawn(process.execPath, ["dist/apps/server/main.js"], {
        cwd: ROOT,
        env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: dataDir },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let stdout = ""
      let stderr = ""
      child.stdout!.on("data", (chunk) => (stdout += String(chunk)))
      child.stderr!.on("data", (chunk) => (stderr += String(chunk)))
      const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)))
      expect(code).not.toBe(0)
      expect(stdout).toBe("")
      expect(stderr.trim().split("\n")).toEqual([`genjobs: cannot listen on 127.0.0.1:${port}: the address is already in use (set PORT or HOST to another one)`])
      expect(existsSync(dataDir)).toBe(false)
    } finally {
      await close(taken)
    }
  }, 60_000)

  it("writes JSON log lines without secrets, serves /metrics to its token, and keeps its files owner-only", async () => {
    const dataDir = join(tempDataDir(), "data")
    const server = await startServer({ DATA_DIR: dataDir, ADMIN_TOKEN: ADMIN, METRICS_TOKEN: METRICS, WORKER_CONCURRENCY: "1" })
    try {
      const demoKey = KEY_PATTERN.exec(server.output)![0]
      const call = (path: string, token: string, body?: unknown) =>
        fetch(`${server.url}${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
      const account = await (await call("/admin/accounts", ADMIN, { name: "ops", creditsMicroCents: 10_000_000 })).json() as any
      const key = (await (await call(`/admin/accounts/${account.id}/keys`, ADMIN, { name: "k" })).json() as any).key as string
      const { jobId } = await (await call("/v1/jobs/submit", key, { model: "demo/image-gen/text-to-image", input: { prompt: "p", width: 16, height: 16 } }))
        .json() as any
      const job = await waitFor("the job", async () => {
        const j = await (await call(`/v1/jobs/${jobId}`, key)).json() as any
        return j.status === "completed" ? j : undefined
      })

      expect((await call("/metrics", "wrong")).status).toBe(401)
      const metrics = await (await call("/metrics", METRICS)).text()
      expect(metrics).toMatch(/^genjobs_queue_pending_jobs 0$/m)
      expect(metrics).toMatch(/^genjobs_jobs_finished_total\{model="demo\/image-gen\/text-to-image",outcome="completed"\} 1$/m)
      // SQLite has one connection and no pool to report.
      expect(metrics).not.toContain("genjobs_db_pool")

      // Owner-only: the directories, the database with its WAL files, the upload secret, the outputs.
      const output = readdirSync(join(dataDir, "files"), { recursive: true, withFileTypes: true }).find((f) => f.isFile())!
      expect(new URL(job.output).pathname).toContain(output.name)
      expect(mode(dataDir)).toBe("700")
      expect(mode(join(dataDir, "files"))).toBe("700")
      expect(mode(join(output.parentPath, output.name))).toBe("600")
      for (const file of ["genjobs.db", "genjobs.db-wal", "genjobs.db-shm", "upload-secret"]) expect(mode(join(dataDir, file)), file).toBe("600")

      expect(await server.stop("SIGTERM")).toBe(0)
      // Every line but the demo key's banner is a JSON object, and no secret is in any of them.
      const lines = server.output.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l))
      const banner = server.output.split("\n").filter((l) => !l.startsWith("{") && l.trim() !== "")
      expect(banner.every((l) => /Demo (account|API key)|gjk_/.test(l))).toBe(true)
      const logged = lines.map((l) => JSON.stringify(l)).join("\n")
      for (const secret of [ADMIN, METRICS, key, demoKey]) expect(logged).not.toContain(secret)
      expect(lines.find((l) => l.msg === "genjobs listening")).toMatchObject({ level: "info", store: "sqlite", workers: 1, metrics: "on" })
      expect(lines.find((l) => l.msg === "http request" && l.route === "/v1/jobs/submit")).toMatchObject({ status: 200, accountId: account.id })
      expect(lines.find((l) => l.msg === "job completed")).toMatchObject({ jobId })
      expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(["genjobs shutting down: no new requests or claims; draining running jobs", "genjobs stopped: workers drained, stores closed"]))
    } finally {
      await server.stop("SIGKILL")
    }
  }, 90_000)
})
