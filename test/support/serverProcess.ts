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

export const tempDataDir = () => mkdtempSync(join(tmpdir(), "genjobs-e2e-"))

export interface RunningServer {
  readonly url: string
  readonly child: ChildProcess
  output: string
  readonly exited: Promise<number | null>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

/** Starts the built bundled server the way `npm start` does, and waits for /health. */
export const startServer = async (env: Record<string, string>): Promise<RunningServer> => {
  const port = await freePort()
  const child = spawn(process.execPath, ["dist/apps/server/main.js"], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const running: RunningServer = {
    url: `http://127.0.0.1:${port}`,
    child,
    output: "",
    exited,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null) child.kill(signal)
      return exited
    }
  }
  child.stdout!.on("data", (chunk) => (running.output += String(chunk)))
  child.stderr!.on("data", (chunk) => (running.output += String(chunk)))
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${running.output}`)
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
