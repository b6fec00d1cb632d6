import { execFileSync, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { freePort, tempDataDir } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

/** The machine's own Node when it is older than the package's floor (this machine's is 20), else none. */
const oldNode = (() => {
  try {
    const version = execFileSync("/usr/bin/node", ["-p", "process.versions.node"], { encoding: "utf8" }).trim()
    return Number(version.split(".")[0]) < 22 ? { path: "/usr/bin/node", version } : undefined
  } catch {
    return undefined
  }
})()

// Only a machine with a Node older than 22 can show it; the test machines have Node 20 there.
describe.skipIf(oldNode === undefined)(`npm start on Node ${oldNode?.version}`, () => {
  it("says the Node is too old and runs the server on Node 24 from the npm registry, which drains on SIGTERM", async () => {
    const port = await freePort()
    const child = spawn(oldNode!.path, ["dist/apps/server/start.js"], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: tempDataDir() },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout!.on("data", (chunk) => (output += String(chunk)))
    child.stderr!.on("data", (chunk) => (output += String(chunk)))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    try {
      const healthy = await waitFor(() => fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false), 120_000)
      expect(healthy, output).toBe(true)
      expect(output).toContain(`genjobs needs Node 22.19 or newer and this is Node ${oldNode!.version}: running on Node 24`)
    } finally {
      child.kill("SIGTERM")
    }
    expect(await exited, output).toBe(0)
    expect(output).toContain("genjobs stopped: workers drained")
  }, 180_000)
})
