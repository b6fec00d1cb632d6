import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { layerS3BlobStore, makeS3BlobStore } from "../../adapters/blob/S3BlobStore.js"
import { layerS3UploadTarget } from "../../adapters/blob/S3UploadTarget.js"
import { UploadTarget } from "../../src/ports/UploadTarget.js"
import { startS3 } from "../support/s3.js"
import { runBlobConformance } from "./blobSuite.js"

const s3 = await startS3()
afterAll(() => s3.close())

runBlobConformance("s3", () => Layer.unwrapEffect(Effect.promise(s3.bucket).pipe(Effect.map(layerS3BlobStore))))

describe("s3: presigned upload URLs, used as a browser would", () => {
  let location: Awaited<ReturnType<typeof s3.bucket>>
  beforeAll(async () => {
    location = await s3.bucket()
  })

  const presign = (uploadId: string, contentType: string) =>
    Effect.runPromise(
      Effect.flatMap(UploadTarget, (t) =>
        Effect.map(t.uploadUrl({ uploadId, contentType, maxSize: 10, expiresAt: Date.now() + 15 * 60_000 }), (url) => ({
          url,
          fileUrl: t.fileUrl(uploadId)
        }))).pipe(Effect.provide(layerS3UploadTarget(location)))
    )

  it("takes a plain PUT with the signed Content-Type, and the file is then readable", async () => {
    const { fileUrl, url } = await presign("upl_a", "image/png")
    const put = await fetch(url, { method: "PUT", body: new Uint8Array([1, 2, 3]), headers: { "content-type": "image/png" } })
    expect(put.status).toBe(200)
    const blob = await Effect.runPromise(makeS3BlobStore(location).get("upl_a"))
    expect(blob._tag === "Some" && [...blob.value.bytes]).toEqual([1, 2, 3])
    expect(blob._tag === "Some" && blob.value.contentType).toBe("image/png")
    expect(fileUrl).toBe(`${location.publicBaseUrl}/upl_a`)
    expect((await fetch(fileUrl)).status).toBe(200)
  })

  // s3rver does not check query-string signatures, so what real S3 enforces is checked on the
  // URL itself: the Content-Type is a signed header, the lifetime is the upload window, and no
  // checksum of an empty body is baked in (it would make real S3 refuse every upload).
  it("signs the Content-Type into the URL for the upload window only", async () => {
    const { url } = await presign("upl_b", "image/png")
    const query = new URL(url).searchParams
    expect(query.get("X-Amz-SignedHeaders")?.split(";")).toContain("content-type")
    expect(Number(query.get("X-Amz-Expires"))).toBeLessThanOrEqual(15 * 60)
    expect(Number(query.get("X-Amz-Expires"))).toBeGreaterThan(14 * 60)
    expect([...query.keys()].filter((k) => k.toLowerCase().includes("checksum"))).toEqual([])
  })
})
