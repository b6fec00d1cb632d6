/**
 * genjobs/ai-sdk from the packed package in an app's own project: `ai` 7 and `@ai-sdk/provider`
 * 4 installed beside it (the optional peer) with zod, none of the engine's other peers (the stores' drivers
 * and the rest, `--omit=peer`). The app generates an image, a video and speech through an engine on loopback
 * with generateImage, experimental_generateVideo and generateSpeech, and meets a failed job as
 * the AI SDK's APICallError.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { existsSync } from "node:fs"
import { rm } from "node:fs/promises"
import type { Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Engine } from "genjobs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serveDemoEngine } from "./demoServer.js"
import { npm, packInto, pkg, run } from "./scratch.js"

const ADMIN = "ai-sdk-project-admin"

const APP = `
import { APICallError } from "@ai-sdk/provider"
import { experimental_generateVideo, generateImage, generateSpeech } from "ai"
import { createGenjobs } from "genjobs/ai-sdk"
const genjobs = createGenjobs({ baseUrl: process.env.BASE_URL, apiKey: process.env.API_KEY })
const image = await generateImage({ model: genjobs.imageModel("demo/image-gen/text-to-image"), prompt: "a fox", size: "32x32" })
const video = await experimental_generateVideo({ model: genjobs.videoModel("demo/video-gen/text-to-video"), prompt: "waves", poll: { intervalMs: 100 } })
const speech = await generateSpeech({ model: genjobs.speechModel("demo/audio-gen/text-to-audio"), text: "hello", providerOptions: { genjobs: { input: { duration: 1 } } } })
const failed = await generateImage({ model: genjobs.imageModel("demo/image-gen/text-to-image"), prompt: "x", providerOptions: { genjobs: { input: { demoFail: true } } } }).catch((e) => e)
console.log(JSON.stringify({
  image: [image.images.length, image.image.mediaType],
  video: [video.videos.length, video.videos[0].uint8Array.byteLength > 0],
  speech: new TextDecoder().decode(speech.audio.uint8Array.slice(0, 4)),
  failed: [APICallError.isInstance(failed), failed.data?.code]
}))
`

let dir: string
let app: string
let engine: Engine
let server: Server
let baseUrl: string

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

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "genjobs-ai-sdk-"))
  const tarball = await packInto(dir)
  app = join(dir, "app")
  mkdirSync(app)
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }))
  await npm(app, [
    "install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts", "--omit=peer",
    // zod: a peer of `ai` that every AI SDK app installs beside it (its docs' install line).
    tarball, `ai@${pkg.devDependencies.ai}`, `@ai-sdk/provider@${pkg.devDependencies["@ai-sdk/provider"]}`, "zod@^4.1.8"
  ])
  writeFileSync(join(app, "app.mjs"), APP)

  ;({ engine, server, baseUrl } = await serveDemoEngine(ADMIN))
}, 600_000)

afterAll(async () => {
  server?.closeAllConnections()
  server?.close()
  await engine?.dispose()
  if (dir !== undefined) await rm(dir, { recursive: true, force: true })
}, 120_000)

describe("an ai 7 app on genjobs/ai-sdk from the packed package", () => {
  it("has none of the engine's peers but the AI SDK's", () => {
    expect(["@effect/sql-pg", "@effect/opentelemetry", "pg", "@redis/client"].filter((name) => existsSync(join(app, "node_modules", name)))).toEqual([])
    expect(existsSync(join(app, "node_modules/@ai-sdk/provider"))).toBe(true)
  })

  it("generates an image, a video and speech through the engine, and gets a failed job as APICallError", async () => {
    const { stdout } = await run(process.execPath, ["app.mjs"], { cwd: app, env: { ...process.env, BASE_URL: baseUrl, API_KEY: await newKey() } })
      .catch((error) => {
        throw new Error(`app.mjs:\n${error.stdout}${error.stderr}`)
      })
    expect(JSON.parse(stdout)).toEqual({
      image: [1, "image/png"],
      video: [1, true],
      speech: "RIFF",
      failed: [true, "GENERATION_FAILED"]
    })
  }, 120_000)
})
