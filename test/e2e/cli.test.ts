import { execFile, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { freePort, tempDataDir } from "../support/serverProcess.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const KEY_PATTERN = /gjk_[A-Za-z0-9_-]{43}/
const { dependencies, peerDependencies } = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")) as {
  dependencies: Record<string, string>
  peerDependencies: Record<string, string>
}
/** A package as the install line names it, with the range genjobs declares (an optional peer, or its own dependency). */
const peer = (name: string) => `${name}@${peerDependencies[name] ?? dependencies[name]}`

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * The built CLI, as the package's bin runs it: its words, environment, streams and exit code
 * through a real process. Each command's behaviour is tested in-process
 * (test/e2e/cliAgainstServer.test.ts); these few keep the packaging path covered.
 */
const cli = (args: ReadonlyArray<string>, env: Record<string, string | undefined> = {}, nodeArgs: ReadonlyArray<string> = []) =>
  new Promise<Run>((resolve) => {
    // The test's environment with these changes; an undefined value removes the variable.
    const merged = Object.fromEntries(Object.entries({ ...process.env, ...env }).filter((e): e is [string, string] => e[1] !== undefined))
    execFile(process.execPath, [...nodeArgs, "dist/apps/cli/main.js", ...args], { cwd: ROOT, env: merged }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, stdout, stderr })
    })
  })

/** `serve` loads the engine, and a busy machine slows a process start. */
const SLOW = { timeout: 120_000 }

describe("the genjobs bin", SLOW, () => {
  it("prints its help as plain text into a pipe, exits 1 on a wrong command line, and reads its environment", async () => {
    const help = await cli(["--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toMatch(/\n {2}accounts list +List accounts/)
    expect(help.stdout).not.toContain("\u001b[")
    const human = await cli(["acounts", "list"])
    expect([human.code, human.stderr]).toEqual([1, "error: USAGE: genjobs: unknown command acounts\nRun genjobs --help for its usage.\n"])
    // GENJOBS_URL and GENJOBS_ADMIN_TOKEN from the process's environment.
    const port = await freePort()
    const down = await cli(["jobs", "list", "--json"], { GENJOBS_URL: `http://127.0.0.1:${port}`, GENJOBS_ADMIN_TOKEN: "a-token" })
    expect(down.code).toBe(1)
    expect(JSON.parse(down.stderr).error).toMatchObject({ code: "CONNECTION_FAILED", message: expect.stringContaining(`127.0.0.1:${port}`) })
  })

  it("serve runs the bundled server in its own process and stops on SIGTERM", async () => {
    const port = await freePort()
    const child = spawn(process.execPath, ["dist/apps/cli/main.js", "serve"], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), DATA_DIR: tempDataDir() },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (c) => (output += String(c)))
    child.stderr.on("data", (c) => (output += String(c)))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    const deadline = Date.now() + 60_000
    let healthy = false
    while (!healthy && Date.now() < deadline && child.exitCode === null) {
      healthy = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
      if (!healthy) await new Promise((r) => setTimeout(r, 100))
    }
    expect(healthy, output).toBe(true)
    expect(output).toMatch(KEY_PATTERN)
    child.kill("SIGTERM")
    expect(await exited).toBe(0)
    const usage = await cli(["serve", "--port", "1"])
    expect(usage.code).toBe(1)
  })

  it("serve without its packages names the ones its store needs, and only those", async () => {
    // As if none of the packages serve may need were installed: the HTTP platform (a dependency
    // of genjobs, so missing only from a pruned install) and the PostgreSQL driver (an optional peer).
    const hidden = { HIDE_PACKAGES: "@effect/platform-node,@effect/sql-pg,pg" }
    const hide = ["--import", "./test/support/hidePackages.mjs"]
    const installLine = (run: Run) => /Install them: npm install (.*)\n$/.exec(run.stderr)?.[1]?.split(" ")
    const sqlite = await cli(["serve"], { ...hidden, DATABASE_URL: undefined, DATA_DIR: tempDataDir() }, hide)
    expect(sqlite.code).toBe(1)
    // Node names the first module it could not find: the server imports the platform's modules by path.
    expect(sqlite.stderr).toMatch(/^error: CONFIG_ERROR: genjobs serve needs packages that are not installed \(Cannot find package '@effect\/platform-node\/NodeHttpServer'/)
    // SQLite's client and migrator are effect's own (effect/sql, node:sqlite): nothing more to install.
    expect(installLine(sqlite)).toEqual(["@effect/platform-node"].map(peer))
    const postgres = await cli(["serve"], { ...hidden, DATABASE_URL: "postgres://genjobs@127.0.0.1:1/genjobs" }, hide)
    expect(postgres.code).toBe(1)
    expect(installLine(postgres)).toEqual(["@effect/platform-node", "@effect/sql-pg"].map(peer))
    // Drivers that are installed are not named again: PostgreSQL's is, here.
    const platformOnly = await cli(["serve"], { HIDE_PACKAGES: "@effect/platform-node", DATABASE_URL: "postgres://genjobs@127.0.0.1:1/genjobs" }, hide)
    expect([platformOnly.code, installLine(platformOnly)]).toEqual([1, [peer("@effect/platform-node")]])
  })
})
