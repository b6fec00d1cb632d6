import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, TestClock } from "effect"
import { BlobStore } from "../../src/ports/BlobStore.js"
import type { Generator } from "../../src/ports/Generator.js"
import { Uploads } from "../../src/services/Uploads.js"
import { UploadSweeper } from "../../src/services/UploadSweeper.js"
import { demoCaller, memoryEngine } from "../support/engineLayer.js"

const idle: Generator = { generate: () => Effect.succeed([]) }

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
      expect(yield* sweeper.sweepOnce).toBe(0)
      expect((yield* uploads.get(caller, fileId)).status).toBe("pending")
      yield* TestClock.adjust("1 minute")
      // Past its lifetime it reads as expired at once, before any sweep.
      expect((yield* uploads.get(caller, fileId)).status).toBe("expired")
      expect(Option.isSome(yield* blobs.get(fileId))).toBe(true)
      expect(yield* sweeper.sweepOnce).toBe(1)
      expect(Option.isNone(yield* blobs.get(fileId))).toBe(true)
      expect((yield* uploads.get(caller, fileId)).status).toBe("expired")
      expect(yield* sweeper.sweepOnce).toBe(0)
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
})
