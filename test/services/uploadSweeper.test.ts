import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { BlobStore } from "../../src/ports/BlobStore.js"
import { idleProvider as idle } from "../support/providers.js"
import { Uploads } from "../../src/services/Uploads.js"
import { UploadSweeper, VERIFY_GRACE_MS } from "../../src/services/UploadSweeper.js"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { layerFsBlobStore } from "../../adapters/blob/FsBlobStore.js"
import { layerSignedUploadTarget } from "../../adapters/blob/SignedUploadTarget.js"
import { layerSqlite } from "../../adapters/sql/sqlite.js"
import { demoCaller, engineOver, memoryEngine } from "../support/engineLayer.js"


describe("upload expiry", () => {
  it.effect("deletes the file and marks the upload expired 60 minutes after creation", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller()
      const uploads = yield* Uploads
      const blobs = yield* BlobStore
      const sweeper = yield* UploadSweeper
      const { fileId } = yield* uploads.presign(caller, { filename: "a.png", contentType: "image/png" })
      yield* blobs.put(fileId, { bytes: new Uint8Array([1]), contentType: "image/png" })
      yield* TestClock.adjust("59 minutes")
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 1, rejected: 0, expired: 0 })
      expect((yield* uploads.get(caller, fileId)).status).toBe("pending")
      yield* TestClock.adjust("1 minute")
      // Past its lifetime it reads as expired at once, before any sweep.
      expect((yield* uploads.get(caller, fileId)).status).toBe("expired")
      expect(Option.isSome(yield* blobs.get(fileId))).toBe(true)
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 0, rejected: 0, expired: 1 })
      expect(Option.isNone(yield* blobs.get(fileId))).toBe(true)
      expect((yield* uploads.get(caller, fileId)).status).toBe("expired")
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 0, rejected: 0, expired: 0 })
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("deletes an oversize or wrongly typed file once the URL and its grace have passed, and keeps good ones", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller()
      const uploads = yield* Uploads
      const blobs = yield* BlobStore
      const sweeper = yield* UploadSweeper
      const presign = (name: string) =>
        uploads.presign(caller, { filename: name, contentType: "image/png" }).pipe(Effect.map((r) => r.fileId))
      const [good, big, html, absent] = yield* Effect.forEach(["good", "big", "html", "absent"], (n) => presign(`${n}.png`))
      // What a presigned object-storage PUT lets through: any length, as declared by the client.
      yield* blobs.put(good!, { bytes: new Uint8Array(10 * 1024 * 1024), contentType: "image/png" })
      yield* blobs.put(big!, { bytes: new Uint8Array(10 * 1024 * 1024 + 1), contentType: "image/png" })
      yield* blobs.put(html!, { bytes: new Uint8Array(5), contentType: "text/html" })
      yield* TestClock.adjust(15 * 60_000 + VERIFY_GRACE_MS - 1)
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 0, rejected: 0, expired: 0 })
      yield* TestClock.adjust(1)
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 2, rejected: 2, expired: 0 })
      for (const id of [big!, html!]) {
        expect(Option.isNone(yield* blobs.get(id))).toBe(true)
        expect((yield* uploads.get(caller, id)).status).toBe("expired")
      }
      expect(Option.isSome(yield* blobs.get(good!))).toBe(true)
      expect((yield* uploads.get(caller, good!)).status).toBe("pending")
      expect((yield* uploads.get(caller, absent!)).status).toBe("pending")
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 0, rejected: 0, expired: 0 })
      yield* TestClock.adjust("35 minutes")
      expect(yield* sweeper.sweepOnce).toEqual({ verified: 0, rejected: 0, expired: 2 })
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("sweeps on its own schedule once started, everything past due", () =>
    Effect.gen(function*() {
      const caller = yield* demoCaller()
      const uploads = yield* Uploads
      const blobs = yield* BlobStore
      const ids = yield* Effect.forEach([1, 2, 3], (n) =>
        uploads.presign(caller, { filename: `${n}.png`, contentType: "image/png" }).pipe(Effect.map((r) => r.fileId)))
      for (const id of ids) yield* blobs.put(id, { bytes: new Uint8Array([1]), contentType: "image/png" })
      yield* TestClock.adjust("2 hours")
      yield* Effect.scoped(Effect.gen(function*() {
        yield* (yield* UploadSweeper).start
        yield* TestClock.adjust("10 seconds")
      }))
      for (const id of ids) expect(Option.isNone(yield* blobs.get(id))).toBe(true)
    }).pipe(Effect.provide(memoryEngine(idle))))

  it.effect("after a restart over the same SQLite file and directory, the first sweep deletes everything past due", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "genjobs-sweep-"))
      const processOver = engineOver(
        layerSqlite({ filename: join(dir, "genjobs.db") }),
        idle,
        {},
        Layer.merge(
          layerFsBlobStore({ dir: join(dir, "files"), baseUrl: "http://files.test" }),
          layerSignedUploadTarget({ publicUrl: "http://files.test", secret: "s" })
        )
      )
      const { caller, ids } = yield* Effect.gen(function*() {
        const caller = yield* demoCaller()
        const uploads = yield* Uploads
        const blobs = yield* BlobStore
        const ids = yield* Effect.forEach(["a", "b"], (n) =>
          uploads.presign(caller, { filename: `${n}.png`, contentType: "image/png" }).pipe(Effect.map((r) => r.fileId)))
        for (const id of ids) yield* blobs.put(id, { bytes: new Uint8Array([1]), contentType: "image/png" })
        return { caller, ids }
      }).pipe(Effect.provide(processOver))
      // The first process is gone; two hours later a new one starts over the same store and files.
      yield* TestClock.adjust("2 hours")
      yield* Effect.gen(function*() {
        expect(yield* (yield* UploadSweeper).sweepOnce).toEqual({ verified: 0, rejected: 0, expired: 2 })
        for (const id of ids) {
          expect(Option.isNone(yield* (yield* BlobStore).get(id))).toBe(true)
          expect((yield* (yield* Uploads).get(caller, id)).status).toBe("expired")
        }
      }).pipe(Effect.provide(processOver))
    }))
})
