import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { BENCH_ACCOUNT, benchCatalog } from "../catalog.js"
import { exited, forkTs } from "./child.js"
import { waitFor } from "./pg.js"
import { log } from "./report.js"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))
export const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef"

/** A free TCP port on the loopback, for a server about to start. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as { port: number }).port
      probe.close(() => resolve(port))
    }).on("error", reject)
  })

let built = false

/**
 * `npm run build` once per bench run, so the server measured is the current source, compiled as
 * shipped; not again under `npm run bench`, whose script built it just before.
 */
const ensureBuilt = () => {
  if (built || process.env.npm_lifecycle_event === "bench") return
  log("building the bundled server (npm run build)")
  execFileSync(join(ROOT, "node_modules/.bin/tsc"), ["-p", "tsconfig.build.json"], { cwd: ROOT, stdio: "inherit" })
  built = true
}

export interface RunningServer {
  readonly url: string
  readonly pid: number
  readonly stop: () => Promise<void>
}

const ready = async (url: string) => {
  await waitFor(`the server at ${url}`, async () => {
    try {
      // Bounded: a server listening before its router is installed holds a request unanswered.
      await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) })
      return true
    } catch {
      return false
    }
  }, 50, 60_000)
}

const stopper = (child: ChildProcess, cleanup: () => void) => async () => {
  await exited(child, () => child.kill("SIGTERM"))
  cleanup()
}

/**
 * The bundled server (`node dist/apps/server/main.js`) configured by environment as docs/
 * configuration.md says: DATA_DIR in a temporary directory (its SQLite store unless `env` gives
 * DATABASE_URL), the admin API on, and CATALOG_FILE the bench catalog (the demo provider, no rate limits).
 */
export const startBundledServer = async (env: Record<string, string>): Promise<RunningServer> => {
  ensureBuilt()
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-server-"))
  const catalogFile = join(dir, "catalog.json")
  writeFileSync(catalogFile, JSON.stringify(benchCatalog("demo")))
  const port = await freePort()
  // BENCH_SERVER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the server under load.
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "")
  const child = spawn(process.execPath, [...nodeArgs, join(ROOT, "dist/apps/server/main.js")], {
    cwd: dir,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: join(dir, "data"),
      ADMIN_TOKEN,
      CATALOG_FILE: catalogFile,
      ...env
    },
    // Its logs (and the demo key it prints on an empty store) are not the bench's output.
    stdio: ["ignore", "ignore", "inherit"]
  })
  const url = `http://127.0.0.1:${port}`
  await ready(url)
  return { url, pid: child.pid!, stop: stopper(child, () => rmSync(dir, { recursive: true, force: true })) }
}

/** A bench/bareServers/*.ts server on a free port. */
export const startBareServer = async (file: string, env: Record<string, string>): Promise<RunningServer> => {
  const port = await freePort()
  const child = forkTs(`bareServers/${file}`, { PORT: String(port), ...env })
  const url = `http://127.0.0.1:${port}`
  const stop = stopper(child, () => {})
  // A server that never answers is stopped here: left running, it held the bench's output open.
  await ready(url).catch(async (error) => {
    await stop()
    throw error
  })
  return { url, pid: child.pid!, stop }
}

const admin = async (url: string, path: string, body: unknown) => {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`POST ${path} answered ${response.status}: ${text}`)
  return JSON.parse(text) as Record<string, unknown>
}

/** Makes `count` funded accounts through the admin API and returns one API key of each. */
export const makeAccounts = async (url: string, count: number): Promise<ReadonlyArray<string>> => {
  const keys: Array<string> = []
  for (let i = 0; i < count; i++) {
    const account = await admin(url, "/admin/accounts", { name: `bench-${i}`, ...BENCH_ACCOUNT })
    keys.push(String((await admin(url, `/admin/accounts/${String(account["id"])}/keys`, { name: "bench" }))["key"]))
  }
  return keys
}

/** Resident set size of a process, from /proc (Linux), in MiB. */
export const rssMiB = (pid: number): number => {
  const status = execFileSync("cat", [`/proc/${pid}/status`], { encoding: "utf8" })
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1])
  return Math.round((kb / 1024) * 10) / 10
}

/** The bundled server of another build (`<root>/dist`), configured as startBundledServer configures this one's. */
export const startBuiltServerAt = async (root: string, env: Record<string, string>): Promise<RunningServer> => {
  const dir = mkdtempSync(join(tmpdir(), "genjobs-bench-built-"))
  const catalogFile = join(dir, "catalog.json")
  writeFileSync(catalogFile, JSON.stringify(benchCatalog("demo")))
  const port = await freePort()
  // Resolved here: the server runs in a directory of its own, where a relative root means nothing.
  const child = spawn(process.execPath, [resolve(root, "dist/apps/server/main.js")], {
    cwd: dir,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: join(dir, "data"), ADMIN_TOKEN, CATALOG_FILE: catalogFile, ...env },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const url = `http://127.0.0.1:${port}`
  await waitFor(`the server at ${url}`, () => fetch(`${url}/health`).then(() => true, () => false), 50, 60_000)
  return {
    url,
    pid: child.pid!,
    stop: async () => {
      await exited(child, () => child.kill("SIGTERM"))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
