import { Effect, Stream } from "effect"
import { mkdtempSync, readdirSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect, it } from "@effect/vitest"
import { layerFsBlobStore, makeFsBlobStore } from "../../adapters/blob/FsBlobStore.js"
import { layerMemoryBlobStore } from "../../adapters/memory/MemoryBlobStore.js"
import { runBlobConformance } from "./blobSuite.js"

runBlobConformance("memory", () => layerMemoryBlobStore("http://files.test"))
runBlobConformance("filesystem", () =>
  layerFsBlobStore({ dir: mkdtempSync(join(tmpdir(), "genjobs-blobs-")), baseUrl: "http://files.test" }))

it.effect("filesystem: refuses keys that could leave its directory", () =>
  Effect.gen(function*() {
    const blobs = yield* makeFsBlobStore({ dir: mkdtempSync(join(tmpdir(), "genjobs-blobs-")), baseUrl: "http://f" })
    for (const key of ["../x", "a/b", "..", ".hidden", ""]) {
      expect((yield* Effect.result(blobs.put(key, { bytes: new Uint8Array([1]), contentType: "text/plain" })))._tag).toBe("Failure")
    }
  }))

it.effect("filesystem: a broken streamed body leaves no partial file behind", () =>
  Effect.gen(function*() {
    const dir = mkdtempSync(join(tmpdir(), "genjobs-blobs-"))
    const blobs = yield* makeFsBlobStore({ dir, baseUrl: "http://f" })
    const broken = Stream.concat(Stream.make(new Uint8Array(1000)), Stream.fail("cut off"))
    yield* Effect.flip(blobs.putStream("upl_x", "image/png", broken))
    expect(readdirSync(join(dir, ".incoming"))).toEqual([])
    expect(readdirSync(dir).filter((name) => name.startsWith("upl_x"))).toEqual([])
  }))
