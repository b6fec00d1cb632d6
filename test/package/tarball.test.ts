/**
 * The package as npm publishes it: `npm pack`, installed into a scratch ESM project with the real
 * frameworks, typechecked as a strict consumer, imported with plain node, and each mount example
 * of examples/mounts served over HTTP under /api/genjobs. The Next.js example's TypeScript files
 * are pasted as they are into a second project, a bare App Router one with only what an
 * in-memory engine needs installed (and TypeScript's packages): no next.config, no tsconfig.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { demoCatalog } from "../support/demoCatalog.js"
import { freePort } from "../support/serverProcess.js"
import { npm, packInto, pkg, ROOT, run } from "./scratch.js"
const ADMIN = "tarball-admin"
const BASE_PATH = "/api/genjobs"

/** Every entry of the exports map whose source exists: a new entry is checked as soon as it is written. */
const ENTRIES = Object.entries(pkg.exports as Record<string, string | Record<string, string>>)
  .filter(([, target]) => typeof target === "object" && existsSync(join(ROOT, target["genjobs-source"]!)))
  .map(([subpath]) => subpath.replace(/^\./, "genjobs"))

// The frameworks the mounts are written for, by major version, and TypeScript as consumers have it.
const FRAMEWORKS = [
  "express@5", "@types/express@5", "fastify@5", "hono@4", "@hono/node-server@2",
  `typescript@${pkg.devDependencies.typescript}`, "@types/node@22",
  // @ai-sdk/provider's declarations (genjobs/ai-sdk, genjobs/providers/ai-sdk) import "json-schema", whose
  // types a consumer without skipLibCheck needs and which it does not install.
  "@types/json-schema"
]
// With what a TypeScript App Router project has (create-next-app's): Next type-checks the pasted route.
const NEXT = ["next@16", "react@19", "react-dom@19", `typescript@${pkg.devDependencies.typescript}`, "@types/react@19", "@types/node@22"]
const isOptional = (name: string) => pkg.peerDependenciesMeta?.[name]?.optional === true
// Every peer, optional ones included, so that every entry imports; at the versions this repo tests.
const PEERS = Object.keys(pkg.peerDependencies).map((name) => `${name}@${pkg.devDependencies[name]}`)
/** What an app with the in-memory engine installs: the peers that are not optional. */
const REQUIRED_PEERS = Object.keys(pkg.peerDependencies).filter((name) => !isOptional(name))
  .map((name) => `${name}@${pkg.devDependencies[name]}`)

/**
 * A strict consumer. DOM is in lib because effect's own declarations (effect/http) name DOM types.
 * The Next.js example is left to Next, which type-checks it with its own settings (a bundler's
 * resolution: its relative import has no extension, as Next projects write them).
 */
const tsconfig = (dir: string) => ({
  compilerOptions: {
    target: "ES2022", module: "nodenext", moduleResolution: "nodenext", lib: ["ES2022", "DOM"], types: ["node"],
    strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false,
    rootDir: dir, outDir: `out-${dir}`
  },
  include: [dir],
  exclude: [`${dir}/next`]
})

let scratch: string
/** The Next.js app's project: genjobs, its required peers and Next, nothing else (not under scratch, whose node_modules Node would find). */
let lean: string
/** The examples compiled by the scratch project's tsc: typechecked by one test, run by the others. */
let examples: Promise<unknown>
const servers: Array<ChildProcess> = []

// --ignore-scripts: no package here needs an install script (the SQLite driver is Node's own node:sqlite).
const install = (cwd: string, packages: Array<string>) =>
  npm(cwd, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", ...packages])
const tsc = (project: string) =>
  run(process.execPath, [join(scratch, "node_modules/typescript/bin/tsc"), "-p", project], { cwd: scratch }).catch((error) => {
    throw new Error(`tsc -p ${project}:\n${error.stdout}${error.stderr}`)
  })

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "genjobs-tarball-"))
  const tarball = await packInto(scratch)
  writeFileSync(join(scratch, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }))
  lean = mkdtempSync(join(tmpdir(), "genjobs-next-"))
  writeFileSync(join(lean, "package.json"), JSON.stringify({ name: "lean", private: true, type: "module" }))
  await Promise.all([install(scratch, [tarball, ...PEERS, ...FRAMEWORKS]), install(lean, [tarball, ...REQUIRED_PEERS, ...NEXT])])

  cpSync(join(ROOT, "examples/mounts"), join(scratch, "examples"), { recursive: true })
  cpSync(join(ROOT, "test/package/consumer.ts"), join(scratch, "consumer/consumer.ts"))
  writeFileSync(join(scratch, "consumer/entries.ts"), ENTRIES.map((entry, i) => `export * as entry${i} from "${entry}"\n`).join(""))
  writeFileSync(join(scratch, "tsconfig.consumer.json"), JSON.stringify(tsconfig("consumer")))
  writeFileSync(join(scratch, "tsconfig.examples.json"), JSON.stringify(tsconfig("examples")))
  examples = tsc("tsconfig.examples.json")
  examples.catch(() => {}) // reported by the test that awaits it
}, 600_000)

afterAll(() => {
  for (const child of servers) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  for (const dir of [scratch, lean]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
}, 120_000)

describe("the packed package", () => {
  it("typechecks a strict consumer of every entry (skipLibCheck off) and runs it with plain node", async () => {
    await tsc("tsconfig.consumer.json")
    const { stdout } = await run(process.execPath, ["out-consumer/consumer.js"], { cwd: scratch })
    expect(JSON.parse(stdout)).toEqual({ direct: 200, mounted: 200, mounts: 4 })
  }, 300_000)

  it("imports every entry with plain node", async () => {
    expect(ENTRIES).toEqual(expect.arrayContaining([
      "genjobs", "genjobs/http", "genjobs/memory", "genjobs/sqlite", "genjobs/postgres", "genjobs/s3",
      "genjobs/providers/replicate", "genjobs/providers/fal",
      "genjobs/providers/openai", "genjobs/providers/runway", "genjobs/providers/veo", "genjobs/providers/openrouter"
    ]))
    const script = `for (const e of ${JSON.stringify(ENTRIES)}) console.log(e, Object.keys(await import(e)).length)`
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: scratch })
    for (const line of stdout.trim().split("\n")) expect(Number(line.split(" ")[1])).toBeGreaterThan(0)
  }, 60_000)

  it("without a store's packages, layerEngineConfig fails its start with the line that installs them; SQLite needs none beyond effect", async () => {
    // SQLite's client and migrator are effect's own (effect/sql over node:sqlite): the lean project has them.
    const sqlite = `const entry = await import("genjobs/sqlite"); console.log(typeof entry.sqliteStore)`
    expect((await run(process.execPath, ["--input-type=module", "-e", sqlite], { cwd: lean })).stdout.trim()).toBe("function")
    const script = `import { Effect, Layer } from "effect"
      import { layerEngineConfig } from "genjobs"
      const error = await Effect.runPromise(Effect.flip(Layer.launch(layerEngineConfig({ publicUrl: "http://127.0.0.1", providers: {} }))))
      console.log(JSON.stringify({ tag: error._tag, message: error.message }))`
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
      cwd: lean,
      env: { ...process.env, DATA_DIR: join(lean, "data"), DATABASE_URL: "postgres://genjobs@127.0.0.1:1/genjobs" }
    })
    const { tag, message } = JSON.parse(stdout)
    expect(tag).toBe("MissingPackagesError")
    expect(message).toMatch(/^DATABASE_URL names PostgreSQL: genjobs\/postgres needs packages that are not installed/)
    expect(message).toContain(`npm install @effect/sql-pg@${pkg.peerDependencies["@effect/sql-pg"]}`)
  }, 60_000)

  it("typechecks the mount examples against the frameworks' typings (skipLibCheck off)", async () => {
    await examples
  }, 120_000)
})

interface App {
  readonly base: string
  readonly child: ChildProcess
  readonly log: () => string
}

const waitForHealth = async (base: string, child: ChildProcess, log: () => string) => {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited early:\n${log()}`)
    const ok = await fetch(`${base}/health`).then((r) => r.ok, () => false)
    if (ok) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`never healthy:\n${log()}`)
}

const start = async (args: Array<string>, env: Record<string, string>, port: number, cwd = scratch): Promise<App> => {
  await examples
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", ADMIN_TOKEN: ADMIN, NEXT_TELEMETRY_DISABLED: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  servers.push(child)
  let output = ""
  child.stdout!.on("data", (chunk) => (output += String(chunk)))
  child.stderr!.on("data", (chunk) => (output += String(chunk)))
  const base = `http://127.0.0.1:${port}${BASE_PATH}`
  await waitForHealth(base, child, () => output)
  return { base, child, log: () => output }
}

/** A request that does not answer within 15 s fails with what it was and the app's log, rather than the test's timeout. */
const call = async (app: App, method: string, path: string, auth: string, body?: unknown) => {
  try {
    const response = await fetch(`${app.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000)
    })
    return { status: response.status, type: response.headers.get("content-type"), body: await response.json() as any }
  } catch (error) {
    throw new Error(`${method} ${path}: ${String(error)}\n${app.log()}`)
  }
}

/** The dashboard's page and the files it loads, its UI toolkit resolved from the installed dependencies. */
const dashboardLoads = async (app: App) => {
  const page = await fetch(`${app.base}/dashboard`)
  expect(page.status).toBe(200)
  const html = await page.text()
  const urls = [...html.matchAll(/"(\.\/dashboard\/assets\/[\w.-]+)"/g)].map((m) => m[1]!)
  expect(urls).toEqual(expect.arrayContaining(["./dashboard/assets/app.js", "./dashboard/assets/preact.js", "./dashboard/assets/htm-preact.js"]))
  for (const url of urls) expect([url, (await fetch(`${app.base}/${url.slice(2)}`)).status]).toEqual([url, 200])
}

/** The API through the mount: admin setup, IP allow-lists, a job to completion, its file, bad JSON, shutdown. */
const exercise = async (app: App, hostBodyLimit?: number) => {
  await dashboardLoads(app)
  expect((await call(app, "PUT", "/admin/catalog", ADMIN, demoCatalog())).status).toBe(200)
  const account = (await call(app, "POST", "/admin/accounts", ADMIN, { name: "mount", creditsMicroCents: 1_000_000 })).body
  const key = async (allowedIPs: Array<string>) =>
    (await call(app, "POST", `/admin/accounts/${account.id}/keys`, ADMIN, { name: "k", allowedIPs })).body.key as string
  const local = await key(["127.0.0.1"])
  const elsewhere = await key(["203.0.113.7"])
  const job = { model: "demo/text-gen/text-to-text", input: { prompt: "mounted" } }

  const refused = await call(app, "POST", "/v1/jobs/submit", elsewhere, job)
  expect([refused.status, refused.body.error.code, refused.body.error.details.ip]).toEqual([403, "IP_NOT_WHITELISTED", "127.0.0.1"])

  const submitted = await call(app, "POST", "/v1/jobs/submit", local, job)
  expect(submitted.status).toBe(200)
  let status: any
  for (let i = 0; i < 100 && status?.status !== "completed"; i++) {
    await new Promise((r) => setTimeout(r, 50))
    status = (await call(app, "GET", `/v1/jobs/${submitted.body.jobId}`, local)).body
  }
  expect(status.status).toBe("completed")
  expect(status.output.startsWith(`${app.base}/files/`)).toBe(true)
  const file = await fetch(status.output)
  expect([file.status, (await file.text()).length > 0]).toEqual([200, true])

  const bad = await call(app, "POST", "/v1/jobs/submit", local, "{not json")
  expect([bad.status, bad.type, bad.body.error.code]).toEqual([400, "application/json", "VALIDATION_ERROR"])
  // Over the engine's 1 MiB: 413 in the engine's envelope, whatever parser the app put in front;
  // then the connection still serves requests (the mount read the rest of the body off).
  const huge = await call(app, "POST", "/v1/jobs/submit", local, { ...job, input: { prompt: "x".repeat(2_000_000) } })
  expect([huge.status, huge.body.error.code]).toEqual([413, "PAYLOAD_TOO_LARGE"])
  expect((await call(app, "GET", `/v1/jobs/${submitted.body.jobId}`, local)).status).toBe(200)
  // Under it but over express.json()'s 100 kB: that parser read it off, and the engine says so.
  if (hostBodyLimit !== undefined) {
    const over = await call(app, "POST", "/v1/jobs/submit", local, { ...job, input: { prompt: "x".repeat(150_000) } })
    expect([over.status, over.body.error.code, over.body.error.details]).toEqual([413, "PAYLOAD_TOO_LARGE", { maxBytes: hostBodyLimit, refusedBy: "host" }])
  }

  const exited = new Promise((resolve) => app.child.once("exit", (code, signal) => resolve(signal ?? code)))
  app.child.kill("SIGTERM")
  const stuck = new Promise((resolve) => setTimeout(() => resolve("not exited 20 s after SIGTERM"), 20_000).unref())
  expect(await Promise.race([exited, stuck]), app.log()).toBe(0)
}

describe("each mount example, over HTTP under /api/genjobs", () => {
  // The app's own body parser's limit, where it has one in front of the engine: express.json()'s 100 kB.
  // Fastify's own 1 MiB bodyLimit does not apply: the mount's parser leaves the body to the engine.
  const mounts: Array<[string, string, Record<string, string>, (number | undefined)?]> = [
    ["node:http", "out-examples/node.js", {}],
    ["Express with express.json()", "out-examples/express.js", { EXPRESS_JSON: "1" }, 100 * 1024],
    ["Express without a body parser", "out-examples/express.js", {}],
    ["Fastify", "out-examples/fastify.js", {}],
    ["Hono on @hono/node-server", "out-examples/hono.js", {}]
  ]
  for (const [name, script, env, hostBodyLimit] of mounts) {
    it(name, async () => exercise(await start([script], env, await freePort()), hostBodyLimit), 60_000)
  }

  // `next build && next start` (~20 s here) rather than `next dev` (~5 s to a first answer): the
  // production server, without a dev compiler racing the requests. Next gives a route no socket
  // but puts the peer in X-Forwarded-For when the request has none, so one trusted hop stands in
  // for the proxy a deployment would have (docs/mounts.md); the default trusts nothing.
  // In the lean project: Next bundles the route with every module it reaches, so an optional peer
  // reached from the engine's entries would fail this build.
  it("Next.js App Router (next build, next start): the example's files pasted into a bare project, no next.config or tsconfig", async () => {
    // No optional peer of genjobs is installed but what @effect/platform-node's own required peers
    // bring (`redis` and its client, which genjobs/redis also names): npm installs those with the
    // platform, and nothing of the engine loads them (docs/decisions.md, "Effect 4").
    const json = (path: string) => JSON.parse(readFileSync(join(lean, "node_modules", path, "package.json"), "utf8"))
    const platformPeers = Object.keys(json("@effect/platform-node").peerDependencies ?? {})
    const brought = new Set(platformPeers.flatMap((peer) => [peer, ...Object.keys(json(peer).dependencies ?? {})]))
    expect([...brought]).toContain("@redis/client")
    const installed = Object.keys(pkg.peerDependencies).filter((name) => !brought.has(name) && existsSync(join(lean, "node_modules", name)))
    expect(installed.sort()).toEqual(Object.keys(pkg.peerDependencies).filter((name) => !isOptional(name) && !brought.has(name)).sort())
    // The TypeScript sources as a user pastes them: app/ and lib/ at the project's root, nothing else.
    const site = join(lean, "site")
    cpSync(join(ROOT, "examples/mounts/next"), site, { recursive: true })
    expect(readdirSync(site).sort()).toEqual(["app", "lib"])
    const next = join(lean, "node_modules/next/dist/bin/next")
    await run(process.execPath, [next, "build", "site"], { cwd: lean, env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } })
      .catch((error) => {
        throw new Error(`next build:\n${error.stdout}${error.stderr}`)
      })
    // Next wrote the tsconfig a bare project gets: the route's import needed no path alias in it.
    expect(JSON.parse(readFileSync(join(site, "tsconfig.json"), "utf8")).compilerOptions.paths).toBeUndefined()
    const port = await freePort()
    const app = await start([next, "start", "site", "-p", String(port), "-H", "127.0.0.1"], {
      TRUSTED_PROXY_HOPS: "1",
      // Lets the route's own SIGTERM handler drain the engine; Next would exit with 143 itself.
      NEXT_MANUAL_SIG_HANDLE: "true"
    }, port, lean)
    // The CLI from the same install, nothing added: its admin commands against the mounted engine,
    // and `serve` on PostgreSQL, whose driver is an optional peer, says which package it needs.
    const genjobs = (args: Array<string>, env: Record<string, string> = {}) =>
      run("npx", ["genjobs", ...args], { cwd: lean, env: { ...process.env, ...env } }).then(
        ({ stdout }) => ({ code: 0, stdout, stderr: "" }),
        (error) => ({ code: error.code as number, stdout: String(error.stdout), stderr: String(error.stderr) })
      )
    expect((await genjobs(["--help"])).stdout).toContain("accounts list")
    const listed = await genjobs(["accounts", "list", "--url", app.base, "--admin-token", ADMIN, "--json"])
    expect([listed.code, Array.isArray(JSON.parse(listed.stdout || "{}").accounts)], listed.stderr).toEqual([0, true])
    const serve = await genjobs(["serve"], { DATABASE_URL: "postgres://genjobs@127.0.0.1:1/genjobs", DATA_DIR: join(lean, "data") })
    expect(serve.code).toBe(1)
    expect(serve.stderr).toMatch(/genjobs\/postgres needs packages that are not installed/)
    expect(serve.stderr).toContain(`npm install @effect/sql-pg@${pkg.peerDependencies["@effect/sql-pg"]}`)
    await exercise(app)
  }, 600_000)
})
