import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/** Neither exited nor killed by a signal (a process a signal ended has no exit code). */
export const isRunning = (child: ChildProcess) => child.exitCode === null && child.signalCode === null

export const tempDataDir = () => mkdtempSync(join(tmpdir(), "genjobs-e2e-"))

export interface RunningServer {
  readonly url: string
  readonly child: ChildProcess
  output: string
  readonly exited: Promise<number | null>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/**
 * Starts the built bundled server the way `npm start` does (with `nodeArgs` for node itself, if
 * any), and waits for /health. Output downloads may reach 127.0.0.1, where the tests' provider
 * simulators serve their files: an explicit opt-in (`env` can take it back). `main` may name the
 * server's source instead (apps/server/main.ts, with `--import tsx` and the genjobs-source
 * condition in `nodeArgs`), for the suites of `npm test`, which build nothing.
 */
export const startServer = async (
  env: Record<string, string>,
  nodeArgs: ReadonlyArray<string> = [],
  main = "dist/apps/server/main.js"
): Promise<RunningServer> => {
  const port = await freePort()
  const child = spawn(process.execPath, [...nodeArgs, main], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", PROVIDER_OUTPUT_ALLOW_PRIVATE: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const running: RunningServer = {
    url: `http://127.0.0.1:${port}`,
    child,
    output: "",
    exited,
    stop: async (signal = "SIGTERM") => {
      if (isRunning(child)) child.kill(signal)
      return exited
    }
  }
  child.stdout!.on("data", (chunk) => (running.output += String(chunk)))
  child.stderr!.on("data", (chunk) => (running.output += String(chunk)))
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (!isRunning(child)) throw new Error(`server exited early (${child.exitCode ?? child.signalCode}):\n${running.output}`)
    try {
      if ((await fetch(`${running.url}/health`)).ok) return running
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  await running.stop("SIGKILL")
  throw new Error(`server did not become healthy:\n${running.output}`)
}

/** One API call to a running server with a bearer token: its status and its JSON answer. */
export const callServer = async (server: RunningServer, method: string, path: string, token: string, body?: unknown) => {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: response.status, body: await response.json() as any }
}
