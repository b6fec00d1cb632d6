/**
 * The install lines the docs give, one per use (docs/embedding.md#install, repeated word for word
 * elsewhere), each run as written in an empty project with the packed package in place of the
 * documented tarball, and then what that use needs loaded and started with plain node. A line
 * that misses a package fails its use's check.
 */
import { spawn } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshPostgresUrl } from "../support/postgres.js"
import { freePort } from "../support/serverProcess.js"
import { NPM_ENV, packInto, pkg, ROOT, run } from "./scratch.js"

/** The pages a user reads: the README and every doc. */
const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
/** The one page that gives every line; the others repeat some. */
const HOME = "docs/embedding.md"
const USES = ["sqlite", "postgres", "s3", "testing", "client", "cli", "serve"]
const DOCUMENTED_TARBALL = `./genjobs-${pkg.version}.tgz`

/** Each marked line of a page: `<!-- install:NAME -->` right above a one-line sh block. */
const markedLines = (page: string) =>
  [...readFileSync(join(ROOT, page), "utf8").matchAll(/<!-- install:([\w-]+) -->\n```sh\n(.+)\n```/g)]
    .map(([, use, line]) => ({ page, use: use!, line: line! }))
const ALL = PAGES.flatMap(markedLines)
const lineOf = (use: string) => ALL.find((l) => l.page === HOME && l.use === use)?.line ?? ""

describe("the documented install lines", () => {
  it(`${HOME} gives one line per use, and every page repeats it word for word`, () => {
    expect(ALL.filter((l) => l.page === HOME).map((l) => l.use)).toEqual(USES)
    const differing = ALL.filter((l) => l.line !== lineOf(l.use)).map((l) => `${l.page}: ${l.use}`)
    expect(differing).toEqual([])
    expect(ALL.filter((l) => l.page === "README.md").map((l) => l.use)).toEqual(["sqlite"])
  })

  it("installs this version's tarball with the ranges package.json declares", () => {
    for (const use of USES) {
      const line = lineOf(use)
      expect(line, use).toContain(`npm install ${DOCUMENTED_TARBALL}`)
      for (const [, name, range] of line.matchAll(/(?:^|\s)(@?[\w.-]+(?:\/[\w.-]+)?)@(\S+)/g)) {
        if (pkg.peerDependencies[name!] !== undefined) expect(`${name}@${range}`, use).toBe(`${name}@${pkg.peerDependencies[name!]}`)
      }
    }
  })

  it("no page installs the package with a line of its own", () => {
    const marked = new Set(ALL.map((l) => l.line))
    const unmarked = PAGES.flatMap((page) =>
      readFileSync(join(ROOT, page), "utf8").split("\n")
        .filter((text) => /npm (install|i) .*genjobs-[\d.]+\.tgz/.test(text) && !marked.has(text))
        .map((text) => `${page}: ${text}`)
    )
    expect(unmarked).toEqual([])
  })
})

let dir: string
let tarball: string
const projects: Array<string> = []

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "genjobs-lines-"))
  tarball = await packInto(dir)
}, 120_000)

// Seven projects' node_modules: removed without blocking the worker (a synchronous removal on a
// loaded machine outlasted the hook and starved vitest's own messages).
afterAll(async () => {
  await Promise.all([...projects, dir].filter((d) => d !== undefined).map((d) => rm(d, { recursive: true, force: true })))
}, 300_000)

/** An empty project (what `npm init -y` makes, as ESM) with the use's line run in it as written. */
const installed = async (use: string) => {
  const project = mkdtempSync(join(tmpdir(), `genjobs-line-${use}-`))
  projects.push(project)
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: `app-${use}`, version: "1.0.0", private: true, type: "module" }))
  const line = lineOf(use).replaceAll(DOCUMENTED_TARBALL, tarball)
  const { stdout } = await run("sh", ["-c", line], { cwd: project, env: { ...process.env, ...NPM_ENV }, maxBuffer: 64 * 1024 * 1024 })
    .catch((error) => {
      throw new Error(`${line}:\n${error.stdout}${error.stderr}`)
    })
  return { project, stdout, has: (name: string) => existsSync(join(project, "node_modules", name)) }
}

const node = (cwd: string, script: string, env: Record<string, string> = {}) =>
  run(process.execPath, ["--input-type=module", "-e", script], { cwd, env: { ...process.env, ...env } })
    .then(({ stdout }) => stdout.trim(), (error) => {
      throw new Error(`node:\n${error.stdout}${error.stderr}`)
    })

/** An engine with the demo provider and catalog over the given store, asked for /health, then disposed. */
const engineScript = (imports: string, store: string) => `
  import { DEMO_PROVIDER_ID, demoCatalog, makeDemoProvider, makeEngine } from "genjobs"
  import { memoryFiles } from "genjobs/memory"
  ${imports}
  const engine = await makeEngine({
    store: ${store},
    files: memoryFiles({ publicUrl: "http://127.0.0.1/api" }),
    providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
    catalog: demoCatalog
  })
  const health = await engine.fetch(new Request("http://127.0.0.1/health"))
  await engine.dispose()
  console.log(health.status)`

// Concurrent: each waits mostly on npm, which shares one cache; the runs share one tarball.
describe.concurrent("each line, in an empty project", () => {
  it("sqlite: an engine on sqliteStore starts, with no PostgreSQL package and no native SQLite module installed", async () => {
    const { project, has } = await installed("sqlite")
    expect(await node(project, engineScript(`import { sqliteStore } from "genjobs/sqlite"`, `sqliteStore({ filename: "./data/app.db" })`))).toBe("200")
    // The driver is Node's own node:sqlite under effect's own effect/sql: no native SQLite module
    // is installed, and no Effect 3 package.
    expect([has("effect"), has("@effect/experimental"), has("@effect/sql"), has("better-sqlite3"), has("@effect/sql-sqlite-node"), has("pg"), has("@effect/sql-pg")])
      .toEqual([true, false, false, false, false, false, false])
  }, 300_000)

  it("postgres: an engine on postgresStore({ url }) starts on the local PostgreSQL, with no SQLite package installed", async () => {
    const { project, has } = await installed("postgres")
    const url = await freshPostgresUrl()
    if (url === undefined) throw new Error("PostgreSQL is not reachable: this check needs it")
    expect(await node(project, engineScript(`import { postgresStore } from "genjobs/postgres"`, `postgresStore({ url: process.env.URL })`), { URL: url })).toBe("200")
    // @effect/sql-pg 4 speaks PostgreSQL's protocol itself: no pg driver either.
    expect([has("@effect/sql-pg"), has("pg"), has("@effect/sql"), has("@effect/platform"), has("@effect/sql-sqlite-node"), has("better-sqlite3")])
      .toEqual([true, false, false, false, false, false])
  }, 300_000)

  it("s3: genjobs/s3 loads", async () => {
    const { project } = await installed("s3")
    expect(await node(project, `import { s3Files } from "genjobs/s3"; console.log(typeof s3Files)`)).toBe("function")
  }, 300_000)

  it("testing: vitest runs a test of makeTestEngine and an it.effect", async () => {
    const { project } = await installed("testing")
    writeFileSync(join(project, "app.test.ts"), `
      import { it } from "@effect/vitest"
      import { Effect } from "effect"
      import { makeTestEngine } from "genjobs/testing"
      import { expect, test } from "vitest"
      test("a job runs to completion", async () => {
        const engine = await makeTestEngine()
        const alice = await engine.account({ credits: 10 })
        const { jobId } = await alice.submit("test/image", { prompt: "a fox" })
        await engine.runJobs()
        expect(await alice.get(jobId)).toMatchObject({ status: "completed" })
        await engine.dispose()
      })
      it.effect("it.effect runs", () => Effect.sync(() => expect(1).toBe(1)))`)
    // vitest's 5 s default per test is too short for a first engine start on a loaded machine.
    const { stdout } = await run(process.execPath, [join(project, "node_modules/vitest/vitest.mjs"), "run", "--testTimeout=60000"], { cwd: project, env: { ...process.env, CI: "1", NO_COLOR: "1" } })
      .catch((error) => {
        throw new Error(`vitest:\n${error.stdout}${error.stderr}`)
      })
    expect(stdout).toMatch(/Tests\s+2 passed/)
  }, 300_000)

  it("client: genjobs/client and genjobs/client/effect load, and an engine in memory starts", async () => {
    const { project } = await installed("client")
    expect(await node(project, `import { createClient } from "genjobs/client"; console.log(typeof createClient({ baseUrl: "http://127.0.0.1" }).submit)`)).toBe("function")
    expect(await node(project, `import { makeEffectClient } from "genjobs/client/effect"; console.log(typeof makeEffectClient)`)).toBe("function")
    expect(await node(project, engineScript(`import { memoryStore } from "genjobs/memory"`, `memoryStore()`))).toBe("200")
  }, 300_000)

  it("cli: the line's own npx genjobs --help prints the commands", async () => {
    const { stdout } = await installed("cli")
    expect(stdout).toContain("accounts list")
  }, 300_000)

  it("serve: npx genjobs serve answers /health and stops on SIGTERM", async () => {
    const { project } = await installed("serve")
    const port = await freePort()
    const child = spawn("npx", ["genjobs", "serve"], {
      cwd: project,
      env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATA_DIR: join(project, "data") },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true
    })
    let output = ""
    child.stdout.on("data", (chunk) => (output += String(chunk)))
    child.stderr.on("data", (chunk) => (output += String(chunk)))
    const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve(signal ?? code)))
    try {
      const deadline = Date.now() + 60_000
      let ok = false
      while (!ok && Date.now() < deadline && child.exitCode === null) {
        ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false)
        if (!ok) await new Promise((r) => setTimeout(r, 100))
      }
      expect(ok, output).toBe(true)
    } finally {
      // npx's whole process group: npx, and the server it started.
      if (child.exitCode === null) process.kill(-child.pid!, "SIGTERM")
    }
    await exited
  }, 300_000)
})
