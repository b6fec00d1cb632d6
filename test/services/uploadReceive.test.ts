import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option, Stream } from "effect"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { makeMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { layerMemoryStores } from "../../adapters/memory/layer.js"
import { StoreError } from "../../src/domain/errors.js"
import { BlobStore } from "../../src/ports/BlobStore.js"
import { idleProvider as idle } from "../support/providers.js"
import { receiveUpload, Uploads } from "../../src/services/Uploads.js"
import { demoCaller, engineOver } from "../support/engineLayer.js"


/** A memory store whose first write fails, as a full disk or an unreachable bucket would. */
const failingOnce = Layer.sync(BlobStore, () => {
  const store = makeMemoryBlobStore("http://files.test")
  let failed = false
  return {
    ...store,
    putStream: (key, contentType, body) =>
      failed ? store.putStream(key, contentType, body) : Effect.fail(new StoreError({ message: "disk full" })).pipe(
        Effect.ensuring(Effect.sync(() => failed = true))
      )
  }
})

describe("receiving a filesystem upload", () => {
  it.effect("leaves the URL usable when the file could not be stored", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller()
      const { fileId, uploadUrl } = yield* (yield* Uploads).presign(caller, { filename: "a.png", contentType: "image/png" })
      const query = new URL(uploadUrl).searchParams
      const grant = { uploadId: fileId, contentType: "image/png", maxSize: Number(query.get("max")), size: null, expiresAt: Number(query.get("expires")) }
      const receive = receiveUpload(grant, query.get("sig")!, "image/png", 3, Stream.make(new Uint8Array([1, 2, 3])))
      const first = yield* Effect.flip(receive)
      expect(first).toBeInstanceOf(StoreError)
      expect(yield* receive).toBe(3)
      expect(Option.getOrThrow(yield* (yield* BlobStore).stat(fileId))).toEqual({ size: 3, contentType: "image/png" })
    }).pipe(Effect.provide(engineOver(
      layerMemoryStores,
      idle,
      {},
      Layer.merge(failingOnce, layerSignedUploadTarget({ publicUrl: "http://files.test", secret: "s" }))
    ))))
})
