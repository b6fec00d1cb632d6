/**
 * genjobs/providers/ai-sdk from the packed package in an app's own project: the app's server runs
 * the engine on a SQLite file with two AI SDK providers, a `MockVideoModelV4` from `ai/test` whose
 * doStart and doStatus write down each call, and the real `@ai-sdk/replicate` package pointed at
 * the Replicate simulator (loopback). The server process is killed (SIGKILL) after a video's start
 * was committed and polled, and started again on the same file: each video completes, each with one
 * start and one charge. What docs/ai-sdk.md ("Crashes, at most one start") promises an app.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ReplicateSimulator, startReplicateSimulator } from "../simulators/replicate.js"
import { demoCatalog } from "../support/demoCatalog.js"
import { waitFor } from "../support/waitFor.js"
import { npm, packInto, pkg } from "./scratch.js"

const ADMIN = "ai-sdk-bridge-admin"
const MOCK_VIDEO = "mock/video-gen/text-to-video"
const REPLICATE_IMAGE = "replicate-ai/image-gen/text-to-image"
const REPLICATE_VIDEO = "replicate-ai/video-gen/text-to-video"

/**
 * The app's server. The mock's doStatus answers `pending` until the process is started with
 * COMPLETE set, so the job is still running when the first process is killed; every call is
 * appended to a file with the process id, which outlives the process.
 */
const SERVER = `
import { appendFileSync } from "node:fs"
import { createServer } from "node:http"
import { createReplicate } from "@ai-sdk/replicate"
import { MockVideoModelV4 } from "ai/test"
import { localFiles, makeEngine } from "genjobs"
import { genjobsNode } from "genjobs/http"
import { aiSdkProvider, pooledFetch } from "genjobs/providers/ai-sdk"
import { sqliteStore } from "genjobs/sqlite"

const env = process.env
const publicUrl = "http://127.0.0.1:" + env.PORT
const MP4 = new Uint8Array([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32])
const response = () => ({ timestamp: new Date(), modelId: "mock-video", headers: undefined })
const record = (file, call) => appendFileSync(file, JSON.stringify({ pid: process.pid, ...call }) + "\\n")

const video = new MockVideoModelV4({
  provider: "mock.video",
  doStart: async (options) => {
    record(env.STARTS_FILE, { prompt: options.prompt })
    return { operation: { taskId: "task-" + process.pid }, warnings: [], response: response() }
  },
  doStatus: async ({ operation }) => {
    record(env.STATUSES_FILE, { operation })
    return env.COMPLETE === "1"
      ? { status: "completed", videos: [{ type: "binary", data: MP4, mediaType: "video/mp4" }], warnings: [], response: response() }
      : { status: "pending", response: response() }
  }
})

// Replicate's video models answer one URL as output; the simulator answers a list, as for images.
// Sent through pooledFetch, as docs/ai-sdk.md has an app do.
const pooled = pooledFetch()
const videoOutputAsString = async (input, init) => {
  const answer = await pooled(input, init)
  if (!answer.headers.get("content-type")?.includes("application/json")) return answer
  const body = await answer.json()
  if (Array.isArray(body.output) && body.output.length === 1 && String(body.output[0]).endsWith(".mp4")) body.output = body.output[0]
  return new Response(JSON.stringify(body), { status: answer.status, headers: answer.headers })
}
const replicate = createReplicate({ apiToken: env.REPLICATE_TOKEN, baseURL: env.REPLICATE_URL + "/v1", fetch: videoOutputAsString })

const engine = await makeEngine({
  store: sqliteStore({ filename: env.DATA + "/genjobs.db" }),
  files: localFiles({ dir: env.DATA + "/files", publicUrl, uploadSecret: "bridge-upload-secret" }),
  providers: {
    mock: aiSdkProvider({ id: "mock", video, pollIntervalMs: 50 }),
    "replicate-ai": aiSdkProvider({ id: "replicate-ai", image: replicate.image, video: replicate.video, pollIntervalMs: 50 })
  },
  http: { adminToken: env.ADMIN_TOKEN },
  // A short lease, so the restarted process takes the killed one's job over within seconds (long
  // enough that a busy machine still renews it in time); outputs from the simulator on 127.0.0.1.
  settings: { leaseMs: 5000, pollIntervalMs: 100, providerPollIntervalMs: 50, providerOutputAllowPrivate: true },
  webhookDispatchers: 0
})
createServer(genjobsNode(engine)).listen(Number(env.PORT), "127.0.0.1", () => console.log("ready"))
`

/** The demo catalog's video model served by "mock", its image and video models by "replicate-ai". */
const catalog = () => {
  const doc = demoCatalog()
  const as = (from: string, slug: string, providerId: string, providerModel: string) => {
    const model = structuredClone(doc.models.find((m) => m.slug === from)!)
    return { ...model, slug, providerId, versions: model.versions.map((v: object) => ({ ...v, provider: { model: providerModel } })) }
  }
  return {
    ...doc,
    providers: [...doc.providers, { ...doc.providers[0], id: "mock", name: "Mock" }, { ...doc.providers[0], id: "replicate-ai", name: "Replicate (AI SDK)" }],
    models: [
      as("demo/video-gen/text-to-video", MOCK_VIDEO, "mock", "mock-video"),
      as("demo/image-gen/text-to-image", REPLICATE_IMAGE, "replicate-ai", "owner/image-model"),
      as("demo/video-gen/text-to-video", REPLICATE_VIDEO, "replicate-ai", "owner/video-model")
    ]
  }
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

let dir: string
let app: string
let sim: ReplicateSimulator
let port: number
let server: ChildProcess | undefined
let output = ""

const files = () => ({ starts: join(dir, "starts.jsonl"), statuses: join(dir, "statuses.jsonl") })
const lines = (file: string): Array<any> =>
  existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line)) : []

/** Starts the app's server and waits for its ready line. */
const startServer = async (complete: boolean) => {
  const child = spawn(process.execPath, ["server.mjs"], {
    cwd: app,
    env: {
      ...process.env,
      PORT: String(port),
      DATA: join(dir, "data"),
      ADMIN_TOKEN: ADMIN,
      STARTS_FILE: files().starts,
      STATUSES_FILE: files().statuses,
      COMPLETE: complete ? "1" : "0",
      REPLICATE_URL: sim.url,
      REPLICATE_TOKEN: sim.apiToken
    }
  })
  server = child
  let ready = false
  // The server's log without its access lines, for the assertions' messages.
  const keep = (chunk: unknown) => String(chunk).split("\n").filter((line) => line !== "" && !line.includes('"http request"')).map((line) => `${line}\n`).join("")
  child.stdout!.on("data", (chunk) => {
    output += keep(chunk)
    if (/^ready$/m.test(String(chunk))) ready = true
  })
  child.stderr!.on("data", (chunk) => (output += keep(chunk)))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  expect(await waitFor(() => ready || child.exitCode !== null, 60_000), output).toBe(true)
  expect(child.exitCode, output).toBe(null)
  return { child, exited }
}

const call = async (method: string, path: string, token: string, body?: unknown) => {
  const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { status: answer.status, body: await answer.json() as any }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "genjobs-ai-sdk-bridge-"))
  const tarball = await packInto(dir)
  app = join(dir, "app")
  mkdirSync(app)
  mkdirSync(join(dir, "data"))
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }))
  await npm(app, [
    "install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=peer",
    tarball,
    `ai@${pkg.devDependencies.ai}`,
    `@ai-sdk/provider@${pkg.devDependencies["@ai-sdk/provider"]}`,
    `@ai-sdk/replicate@${pkg.devDependencies["@ai-sdk/replicate"]}`,
    "zod@^4.1.8"
  ])
  writeFileSync(join(app, "server.mjs"), SERVER)
  // Slow enough that the video is still processing when the server is killed.
  sim = await startReplicateSimulator({ durationMs: 3_000 })
  port = await freePort()
}, 600_000)

afterAll(async () => {
  server?.kill("SIGKILL")
  await sim?.close()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
}, 60_000)

describe("an app's server on genjobs/providers/ai-sdk from the packed package, killed mid-generation", () => {
  it("resumes each video after a SIGKILL from its stored operation: one start, one charge, completed", async () => {
    const first = await startServer(false)
    expect((await call("PUT", "/admin/catalog", ADMIN, catalog())).status).toBe(200)
    const account = (await call("POST", "/admin/accounts", ADMIN, { name: "app", creditsMicroCents: 100_000_000 })).body
    const key = (await call("POST", `/admin/accounts/${account.id}/keys`, ADMIN, { name: "k" })).body.key as string
    const submit = async (model: string, prompt: string) => {
      const submitted = await call("POST", "/v1/jobs/submit", key, { model, input: { prompt } })
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(200)
      return submitted.body.jobId as string
    }
    const job = async (jobId: string) => (await call("GET", `/v1/jobs/${jobId}`, key)).body
    const completed = (jobId: string) => async () => (await job(jobId)).status === "completed"

    // The real package's doGenerate: an image through the simulator, one prediction.
    const image = await submit(REPLICATE_IMAGE, "a replicated fox")
    expect(await waitFor(completed(image), 30_000), output).toBe(true)
    expect(sim.counters.starts).toBe(1)

    // Two videos, each started and polled; then the process dies without a word.
    const mockVideo = await submit(MOCK_VIDEO, "waves")
    const replicateVideo = await submit(REPLICATE_VIDEO, "a replicated wave")
    const polls = sim.counters.polls
    expect(await waitFor(() => lines(files().statuses).length > 0 && sim.counters.starts === 2 && sim.counters.polls > polls, 30_000), output).toBe(true)
    expect((await job(replicateVideo)).status).not.toBe("completed")
    first.child.kill("SIGKILL")
    await first.exited
    const before = { starts: lines(files().starts), statuses: lines(files().statuses).length }
    expect(before.starts).toEqual([{ pid: first.child.pid, prompt: "waves" }])

    const second = await startServer(true)
    expect(await waitFor(completed(mockVideo), 30_000), output).toBe(true)
    expect(await waitFor(completed(replicateVideo), 30_000), output).toBe(true)

    expect(await job(mockVideo)).toMatchObject({ status: "completed", outputs: [{ type: "video", contentType: "video/mp4" }] })
    expect(await job(replicateVideo)).toMatchObject({ status: "completed", outputs: [{ type: "video", contentType: "video/mp4" }] })
    // doStart ran once, in the killed process; the new one polled the operation it had stored.
    expect(lines(files().starts)).toEqual(before.starts)
    const resumed = lines(files().statuses).slice(before.statuses)
    expect(resumed.length).toBeGreaterThan(0)
    expect(resumed.every((s) => s.pid === second.child.pid && s.operation.taskId === `task-${first.child.pid}`)).toBe(true)
    // The real package created one prediction per job: the image's and the video's.
    expect(sim.counters.starts).toBe(2)
    // One charge per job, no refund.
    const ledger = (await call("GET", `/admin/accounts/${account.id}/ledger`, ADMIN)).body.entries as Array<{ jobId: string | null; kind: string }>
    for (const jobId of [image, mockVideo, replicateVideo]) {
      expect(ledger.filter((entry) => entry.jobId === jobId).map((entry) => entry.kind)).toEqual(["charge"])
    }
  }, 180_000)
})
