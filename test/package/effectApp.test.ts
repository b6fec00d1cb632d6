/**
 * The engine in apps of each kind, from the packed package, installed without a flag: an app on
 * effect 4.1 mounts the engine's routes in its own HttpRouter beside its own and gives it its
 * logger (examples/effectApp.ts, run as it is); an app on effect 3 keeps its effect and mounts the
 * engine through the node:http mount. Each runs a job to completion over HTTP.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freePort } from "../support/serverProcess.js"
import { waitFor } from "../support/waitFor.js"
import { npm, packInto, pkg, ROOT } from "./scratch.js"

/** An app on effect 3 whose own routes answer through its effect, and the engine under /api/genjobs. */
const EFFECT3_APP = `
import { createServer } from "node:http"
import { Effect } from "effect"
import { DEMO_PROVIDER_ID, demoCatalog, makeDemoProvider, makeEngine } from "genjobs"
import { genjobsNode } from "genjobs/http"
import { memoryFiles, memoryStore } from "genjobs/memory"
const port = Number(process.env.PORT)
const engine = await makeEngine({
  store: memoryStore(),
  files: memoryFiles({ publicUrl: \`http://127.0.0.1:\${port}/api/genjobs\` }),
  providers: { [DEMO_PROVIDER_ID]: makeDemoProvider() },
  catalog: demoCatalog,
  http: { adminToken: "effect3-admin" },
  basePath: "/api/genjobs"
})
const genjobs = genjobsNode(engine, { basePath: "/api/genjobs" })
createServer((req, res) => {
  if (req.url.startsWith("/api/genjobs")) return genjobs(req, res)
  res.end(Effect.runSync(Effect.succeed("hello from an effect 3 app")))
}).listen(port, "127.0.0.1", () => console.log("listening"))
`

let dir: string
const children: Array<ChildProcess> = []

const project = (name: string) => {
  const path = join(dir, name)
  mkdirSync(path)
  writeFileSync(join(path, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true, type: "module" }))
  return path
}

const versionIn = (from: string, name: string) =>
  JSON.parse(readFileSync(join(from, "node_modules", name, "package.json"), "utf8")).version as string

/** Waits until `check` holds, or fails naming `what`. */
const until = async (check: () => Promise<boolean> | boolean, ms: number, what: () => string) => {
  if (!(await waitFor(check, ms))) throw new Error(`timed out waiting for ${what()}`)
}

/** Starts `file` in `cwd` on a free port; its output so far, and the base URL once `ready` shows in it. */
const start = async (cwd: string, file: string, ready: RegExp, env: Record<string, string> = {}) => {
  const port = await freePort()
  const child = spawn(process.execPath, [file], { cwd, env: { ...process.env, ...env, PORT: String(port) }, stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  const output = { text: "" }
  child.stdout!.on("data", (chunk) => (output.text += chunk))
  child.stderr!.on("data", (chunk) => (output.text += chunk))
  await until(() => ready.test(output.text), 60_000, () => `${file} to start:\n${output.text}`)
  return { output, url: `http://127.0.0.1:${port}` }
}

/** Submits a demo job with `key` at `base` and polls it to its end. */
const runJob = async (base: string, key: string) => {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
  const submitted = await (await fetch(`${base}/v1/jobs/submit`, {
    method: "POST",
    headers,
    body: JSON.stringify({ model: "demo/image-gen", input: { prompt: "a fox" } })
  })).json() as { jobId: string }
  let job: { status: string } = { status: "pending" }
  await until(async () => {
    job = await (await fetch(`${base}/v1/jobs/${submitted.jobId}`, { headers })).json() as { status: string }
    return job.status === "completed" || job.status === "failed"
  }, 30_000, () => `the job to end (${JSON.stringify(job)})`)
  return job.status
}

let effect4: string
let effect3: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "genjobs-effect-apps-"))
  const tarball = await packInto(dir)
  effect4 = project("effect4")
  effect3 = project("effect3")
  const install = (cwd: string, args: Array<string>) => npm(cwd, ["install", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=peer", ...args])
  await Promise.all([
    // No --legacy-peer-deps or --force.
    install(effect4, [tarball, `effect@${pkg.dependencies.effect}`, `@effect/platform-node@${pkg.dependencies["@effect/platform-node"]}`]),
    install(effect3, [tarball, "effect@^3.22.4"])
  ])
  copyFileSync(join(ROOT, "examples/effectApp.ts"), join(effect4, "app.ts"))
  writeFileSync(join(effect3, "app.mjs"), EFFECT3_APP)
}, 600_000)

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL")
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
}, 60_000)

describe("an app on effect 4.1", () => {
  it("shares genjobs's effect: npm installs one copy", () => {
    expect(versionIn(effect4, "effect")).toMatch(/^4\.1\./)
    expect(existsSync(join(effect4, "node_modules/genjobs/node_modules/effect"))).toBe(false)
  })

  it("serves its own route and the engine's API from one router, runs a job, and logs the engine's lines through its own logger", async () => {
    const { output, url } = await start(effect4, "app.ts", /Listening on/, { FILES_DIR: join(effect4, "files") })
    expect(await (await fetch(`${url}/hello`)).text()).toBe("hello from the app")
    const key = /demo key: (gjk_\S+)/.exec(output.text)![1]!
    expect(await runJob(url, key)).toBe("completed")
    // The engine's job and request lines came out through the app's logger.
    await until(
      () => /\[app\] Info job completed/.test(output.text) && /\[app\] Info http request/.test(output.text),
      10_000,
      () => `the engine's lines in the app's log:\n${output.text}`
    )
  }, 120_000)
})

describe("an app on effect 3", () => {
  it("keeps its effect 3, with genjobs's 4.1 beside it", () => {
    expect(versionIn(effect3, "effect")).toMatch(/^3\./)
    expect(versionIn(join(effect3, "node_modules/genjobs"), "effect")).toMatch(/^4\.1\./)
  })

  it("mounts the engine under /api/genjobs with the node:http mount and runs a job", async () => {
    const { url } = await start(effect3, "app.mjs", /listening/)
    const admin = { authorization: "Bearer effect3-admin", "content-type": "application/json" }
    const account = await (await fetch(`${url}/api/genjobs/admin/accounts`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ name: "app", creditsMicroCents: 10_000_000 })
    })).json() as { id: string }
    const { key } = await (await fetch(`${url}/api/genjobs/admin/accounts/${account.id}/keys`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ name: "k" })
    })).json() as { key: string }
    expect(await runJob(`${url}/api/genjobs`, key)).toBe("completed")
    expect(await (await fetch(`${url}/`)).text()).toBe("hello from an effect 3 app")
  }, 120_000)
})
