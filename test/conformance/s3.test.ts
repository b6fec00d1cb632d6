import { Effect, Fiber, Layer, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import { spawn } from "node:child_process"
import { once } from "node:events"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerS3BlobStore, makeS3BlobStore } from "../../adapters/blob/S3BlobStore.js"
import { layerS3UploadTarget } from "../../adapters/blob/S3UploadTarget.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { StoreError } from "../../src/domain/errors.js"
import { BlobStore } from "../../src/ports/BlobStore.js"
import { idleProvider as idle } from "../support/providers.js"
import { UploadTarget } from "../../src/ports/UploadTarget.js"
import { Uploads, UploadSigningSecret } from "../../src/services/Uploads.js"
import { UploadSweeper, VERIFY_GRACE_MS } from "../../src/services/UploadSweeper.js"
import { demoCaller, engineOver } from "../support/engineLayer.js"
import { s3ClientAt, startS3 } from "../support/s3.js"
import { generatedBody, PIECE, readAll, runBlobConformance, sha256Of } from "./blobSuite.js"

const s3 = await startS3()
afterAll(() => s3.close())

/** Every command the engine's S3 client sends: its name, input and, once answered, output. */
const sent: Array<{ readonly command: string; readonly input: Record<string, unknown>; output?: Record<string, unknown> }> = []
s3.client.middlewareStack.add((next, context) => async (args) => {
  const entry: (typeof sent)[number] = { command: context.commandName ?? "", input: args.input as Record<string, unknown> }
  sent.push(entry)
  const answer = await next(args)
  entry.output = answer.output as unknown as Record<string, unknown>
  return answer
}, { step: "initialize", name: "recordCommands" })

/** The commands sent for one bucket, by name. */
const commandsTo = (bucket: string) => sent.filter((entry) => entry.input.Bucket === bucket).map((entry) => entry.command)

/**
 * Multipart uploads started in the bucket and neither completed nor aborted: the parts S3 would
 * keep billing. s3rver implements neither ListMultipartUploads nor AbortMultipartUpload (it
 * answers 405), so this is reckoned from the requests sent, as real S3 would act on them.
 */
const openUploads = (bucket: string) => {
  const mine = sent.filter((entry) => entry.input.Bucket === bucket)
  const closed = new Set(mine.filter((entry) =>
    entry.command === "AbortMultipartUploadCommand" || (entry.command === "CompleteMultipartUploadCommand" && entry.output !== undefined)
  ).map((entry) => entry.input.UploadId))
  return mine.flatMap((entry) =>
    entry.command === "CreateMultipartUploadCommand" && entry.output !== undefined && !closed.has(entry.output.UploadId)
      ? [entry.output.UploadId]
      : []
  )
}

runBlobConformance("s3", () => Layer.unwrap(Effect.promise(s3.bucket).pipe(Effect.map(layerS3BlobStore))))

describe("s3: presigned upload URLs, used as a browser would", () => {
  let location: Awaited<ReturnType<typeof s3.bucket>>
  beforeAll(async () => {
    location = await s3.bucket()
  })

  const presign = (uploadId: string, contentType: string, size: number | null = null) =>
    Effect.runPromise(
      Effect.flatMap(UploadTarget, (t) =>
        Effect.map(t.uploadUrl({ uploadId, contentType, maxSize: 10, size, expiresAt: Date.now() + 15 * 60_000 }), (url) => ({
          url,
          fileUrl: t.fileUrl(uploadId)
        }))).pipe(Effect.provide(layerS3UploadTarget(location)))
    )

  it("takes a plain PUT with the signed Content-Type, and the file is then readable", async () => {
    const { fileUrl, url } = await presign("upl_a", "image/png")
    const put = await fetch(url, { method: "PUT", body: new Uint8Array([1, 2, 3]), headers: { "content-type": "image/png" } })
    expect(put.status).toBe(200)
    const blob = await Effect.runPromise(readAll("upl_a").pipe(Effect.provide(layerS3BlobStore(location))))
    expect(blob._tag === "Some" && [...blob.value.bytes]).toEqual([1, 2, 3])
    expect(blob._tag === "Some" && blob.value.contentType).toBe("image/png")
    expect(fileUrl).toBe(`${location.publicBaseUrl}/upl_a`)
    expect((await fetch(fileUrl)).status).toBe(200)
  })

  // The lifetime is the upload window, and no checksum of an empty body is baked in (it would
  // make real S3 refuse every upload).
  it("signs the Content-Type into the URL for the upload window only", async () => {
    const { url } = await presign("upl_b", "image/png")
    const query = new URL(url).searchParams
    expect(query.get("X-Amz-SignedHeaders")?.split(";")).toContain("content-type")
    expect(query.get("X-Amz-SignedHeaders")?.split(";")).not.toContain("content-length")
    expect(Number(query.get("X-Amz-Expires"))).toBeLessThanOrEqual(15 * 60)
    expect(Number(query.get("X-Amz-Expires"))).toBeGreaterThan(14 * 60)
    expect([...query.keys()].filter((k) => k.toLowerCase().includes("checksum"))).toEqual([])
  })

  it("is refused, storing nothing, when the PUT differs from what was signed", async () => {
    const stored = (key: string) => Effect.runPromise(makeS3BlobStore(location).stat(key)).then(Option.isSome)
    const put = (url: string, bytes: number, contentType: string) =>
      fetch(url, { method: "PUT", body: new Uint8Array(bytes), headers: { "content-type": contentType } }).then((r) => r.status)
    const typed = await presign("upl_t", "image/png")
    expect(await put(typed.url, 3, "text/html")).toBe(403)
    const sized = await presign("upl_s", "image/png", 3)
    expect(await put(sized.url, 4, "image/png")).toBe(403)
    expect(await put(sized.url, 2, "image/png")).toBe(403)
    expect(await put(sized.url.replace("/upl_s?", "/upl_other?"), 3, "image/png")).toBe(403)
    const longer = new URL(sized.url)
    longer.searchParams.set("X-Amz-Expires", "604800")
    expect(await put(longer.toString(), 3, "image/png")).toBe(403)
    for (const key of ["upl_t", "upl_s", "upl_other"]) expect(await stored(key)).toBe(false)
    expect(await put(sized.url, 3, "image/png")).toBe(200)
  })

  it("signs a size declared at presign as the exact Content-Length, and a PUT of that length works", async () => {
    const { url } = await presign("upl_c", "image/png", 3)
    expect(new URL(url).searchParams.get("X-Amz-SignedHeaders")?.split(";")).toEqual(
      expect.arrayContaining(["content-length", "content-type"])
    )
    const put = await fetch(url, { method: "PUT", body: new Uint8Array([4, 5, 6]), headers: { "content-type": "image/png" } })
    expect(put.status).toBe(200)
    expect(await Effect.runPromise(makeS3BlobStore(location).stat("upl_c"))).toEqual(
      Option.some({ size: 3, contentType: "image/png" })
    )
  })
})

describe("s3: what a presigned PUT cannot refuse, the upload sweeper removes", () => {

  it("deletes an oversize object once the URL and its grace have passed, and keeps a good one", async () => {
    const location = await s3.bucket()
    const files = Layer.mergeAll(
      layerS3BlobStore(location),
      layerS3UploadTarget(location),
      Layer.succeed(UploadSigningSecret, "unused")
    )
    await Effect.runPromise(Effect.gen(function*() {
      const caller = yield* demoCaller()
      const uploads = yield* Uploads
      const blobs = yield* BlobStore
      const sweeper = yield* UploadSweeper
      const putThrough = (contentType: string, bytes: Uint8Array) =>
        Effect.gen(function*() {
          const presigned = yield* uploads.presign(caller, { filename: "f", contentType })
          const reply = yield* Effect.promise(() =>
            fetch(presigned.uploadUrl, { method: "PUT", body: bytes as BodyInit, headers: { "content-type": contentType } })
          )
          expect(reply.status).toBe(200)
          return presigned.fileId
        })
      const big = yield* putThrough("image/gif", new Uint8Array(10 * 1024 * 1024 + 1))
      const good = yield* putThrough("image/gif", new Uint8Array(10 * 1024 * 1024))
      yield* TestClock.adjust(15 * 60_000 + VERIFY_GRACE_MS)
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 1, rejected: 1, expired: 0 })
      expect(Option.isNone(yield* blobs.stat(big))).toBe(true)
      expect((yield* uploads.get(caller, big)).status).toBe("expired")
      expect(Option.getOrThrow(yield* blobs.stat(good)).size).toBe(10 * 1024 * 1024)
    }).pipe(Effect.provide(engineOver(layerMemoryStores, idle, {}, files)), Effect.provide(TestClock.layer())))
  })
})

describe("s3: a streamed body is uploaded in parts as it is read", () => {
  const count = (commands: ReadonlyArray<string>, name: string) => commands.filter((c) => c === `${name}Command`).length

  it("uploads a 20 MiB body as three parts of 8 MiB at most, and a small one with a single PutObject", async () => {
    const location = await s3.bucket()
    const blobs = makeS3BlobStore(location)
    expect(await Effect.runPromise(blobs.putStream("job_v-0.mp4", "video/mp4", generatedBody(320)))).toBe(20 * 1024 * 1024)
    expect(commandsTo(location.bucket).filter((c) => c !== "UploadPartCommand" && c !== "CreateBucketCommand")).toEqual([
      "CreateMultipartUploadCommand",
      "CompleteMultipartUploadCommand"
    ])
    expect(count(commandsTo(location.bucket), "UploadPart")).toBe(3)
    const stored = Option.getOrThrow(await Effect.runPromise(blobs.get("job_v-0.mp4")))
    expect(stored).toMatchObject({ size: 20 * 1024 * 1024, contentType: "video/mp4" })
    expect(await Effect.runPromise(sha256Of(stored.body))).toBe(await Effect.runPromise(sha256Of(generatedBody(320))))

    expect(await Effect.runPromise(blobs.putStream("job_i-0.png", "image/png", generatedBody(100)))).toBe(100 * PIECE)
    expect(commandsTo(location.bucket).slice(-1)).toEqual(["PutObjectCommand"])
    expect(Option.getOrThrow(await Effect.runPromise(blobs.stat("job_i-0.png")))).toEqual({ size: 100 * PIECE, contentType: "image/png" })
  })

  it("aborts the multipart upload when the body fails after some parts went up, and stores nothing", async () => {
    const location = await s3.bucket()
    const blobs = makeS3BlobStore(location)
    const broken = Stream.concat(generatedBody(320), Stream.fail("provider cut off" as const))
    expect(await Effect.runPromise(Effect.flip(blobs.putStream("job_f-0.mp4", "video/mp4", broken)))).toBe("provider cut off")
    const commands = commandsTo(location.bucket)
    expect(count(commands, "UploadPart")).toBeGreaterThanOrEqual(2)
    expect(count(commands, "AbortMultipartUpload")).toBe(1)
    expect(count(commands, "CompleteMultipartUpload")).toBe(0)
    expect(openUploads(location.bucket)).toEqual([])
    expect(Option.isNone(await Effect.runPromise(blobs.stat("job_f-0.mp4")))).toBe(true)
  })

  it("fails with a StoreError when S3 refuses the upload, and lets go of the body", async () => {
    const location = await s3.bucket()
    const blobs = makeS3BlobStore({ ...location, bucket: "genjobs-missing" })
    for (const pieces of [320, 10]) {
      let released = false
      const body = generatedBody(pieces).pipe(Stream.ensuring(Effect.sync(() => (released = true))))
      const error = await Effect.runPromise(Effect.flip(blobs.putStream("job_e-0.mp4", "video/mp4", body)))
      expect(error).toBeInstanceOf(StoreError)
      expect(released).toBe(true)
    }
  })

  // A superseded worker or a drain interrupts the put while the provider's stream is stalled.
  it("aborts the multipart upload, before the interruption returns, when the put is interrupted", async () => {
    const location = await s3.bucket()
    const blobs = makeS3BlobStore(location)
    const stalled = Stream.concat(generatedBody(320), Stream.never)
    const fiber = Effect.runFork(blobs.putStream("job_s-0.mp4", "video/mp4", stalled))
    await expect.poll(() => count(commandsTo(location.bucket), "UploadPart"), { timeout: 10_000 }).toBe(2)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(count(commandsTo(location.bucket), "AbortMultipartUpload")).toBe(1)
    expect(openUploads(location.bucket)).toEqual([])
    expect(Option.isNone(await Effect.runPromise(blobs.stat("job_s-0.mp4")))).toBe(true)
  })

  // The server runs in a process of its own, so the growth measured here is the store's own
  // buffering. Garbage is collected at each sample: the bound is on what the upload holds, not on
  // when V8 chooses to collect (64 KiB pieces made and dropped add up to the body's size).
  it("holds a few 8 MiB parts, not the body, while a 100 MiB body generated on the fly goes up", async () => {
    const server = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("../support/s3Child.ts", import.meta.url))], {
      stdio: ["pipe", "pipe", "inherit"]
    })
    try {
      const [line] = await once(createInterface({ input: server.stdout }), "line") as [string]
      const { bucket, endpoint } = JSON.parse(line) as { endpoint: string; bucket: string }
      const client = s3ClientAt(endpoint)
      const blobs = makeS3BlobStore({ client, bucket, publicBaseUrl: `${endpoint}/${bucket}` })
      setFlagsFromString("--expose-gc")
      const gc = runInNewContext("gc") as () => void
      const held = () => {
        gc()
        const memory = process.memoryUsage()
        return memory.heapUsed + memory.arrayBuffers
      }
      // From the lowest sample, the start's included: memory an earlier test let go of (its
      // ArrayBuffers are freed after it, not at its gc) could leave the start above every sample.
      let lowest = held()
      let peak = lowest
      // Sampled as the store reads the body (every 16th piece, 1 MiB), not on a timer: a timer's
      // samples could all land between parts on a busy machine, and see nothing held.
      let pieces = 0
      const body = generatedBody(1600).pipe(Stream.tap(() => Effect.sync(() => {
        if (++pieces % 16 !== 0) return
        const now = held()
        peak = Math.max(peak, now)
        lowest = Math.min(lowest, now)
      })))
      expect(await Effect.runPromise(blobs.putStream("job_m-0.mp4", "video/mp4", body))).toBe(100 * 1024 * 1024)
      const grewMiB = (peak - lowest) / 1024 / 1024
      // Two parts in flight, one being filled (its pieces, then their concatenation) and one just
      // answered but not yet let go: 40 to 50 MiB measured on Node 20, 50 to 71 MiB on Node 24
      // (more while the other core is busy; where Node 24 holds the rest is not pinned down).
      // Gathered whole, as before: 300 MiB. So the bound is the body's own size: an upload that
      // holds the body whole fails it. The lower bound shows the samples saw a part being filled.
      expect(grewMiB).toBeGreaterThan(2)
      expect(grewMiB).toBeLessThan(100)
      expect(Option.getOrThrow(await Effect.runPromise(blobs.stat("job_m-0.mp4"))).size).toBe(100 * 1024 * 1024)
    } finally {
      server.stdin.end()
      await once(server, "exit")
    }
  })
})
