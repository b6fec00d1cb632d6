import { Effect, Layer, Option, TestClock, TestContext } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerS3BlobStore, makeS3BlobStore } from "../../adapters/blob/S3BlobStore.js"
import { layerS3UploadTarget } from "../../adapters/blob/S3UploadTarget.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { BlobStore } from "../../src/ports/BlobStore.js"
import { idleProvider as idle } from "../support/providers.js"
import { UploadTarget } from "../../src/ports/UploadTarget.js"
import { Uploads, UploadSigningSecret } from "../../src/services/Uploads.js"
import { UploadSweeper, VERIFY_GRACE_MS } from "../../src/services/UploadSweeper.js"
import { demoCaller, engineOver } from "../support/engineLayer.js"
import { startS3 } from "../support/s3.js"
import { readAll, runBlobConformance } from "./blobSuite.js"

const s3 = await startS3()
afterAll(() => s3.close())

runBlobConformance("s3", () => Layer.unwrapEffect(Effect.promise(s3.bucket).pipe(Effect.map(layerS3BlobStore))))

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
    }).pipe(Effect.provide(engineOver(layerMemoryStores, idle, {}, files)), Effect.provide(TestContext.TestContext)))
  })
})
