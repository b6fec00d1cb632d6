import { Effect, Layer, Option, Stream } from "effect"
import { type Blob, BlobStore, checkedPrefixes } from "../../src/ports/BlobStore.js"

/** Blobs in a Map, served (by whoever mounts it) under `baseUrl`. */
export const makeMemoryBlobStore = (baseUrl: string): BlobStore["Service"] => {
  const blobs = new Map<string, Blob>()
  return {
    put: (key, blob) => Effect.sync(() => {
      blobs.set(key, blob)
      return `${baseUrl.replace(/\/$/, "")}/${encodeURIComponent(key)}`
    }),
    putStream: (key, contentType, body) =>
      Stream.runCollect(body).pipe(
        Effect.map((chunks) => Buffer.concat([...chunks])),
        Effect.tap((bytes) => Effect.sync(() => blobs.set(key, { bytes: new Uint8Array(bytes), contentType }))),
        Effect.map((bytes) => bytes.length)
      ),
    get: (key, range) =>
      Effect.sync(() =>
        Option.map(Option.fromNullishOr(blobs.get(key)), (b) => ({
          size: b.bytes.length,
          contentType: b.contentType,
          body: Stream.make(range === undefined ? b.bytes : b.bytes.subarray(range.start, range.end + 1))
        }))
      ),
    stat: (key) =>
      Effect.sync(() =>
        Option.map(Option.fromNullishOr(blobs.get(key)), (b) => ({ size: b.bytes.length, contentType: b.contentType }))
      ),
    remove: (key) => Effect.sync(() => void blobs.delete(key)),
    removeByPrefix: (prefixes) =>
      Effect.map(checkedPrefixes(prefixes), (checked) => {
        const keys = [...blobs.keys()].filter((key) => checked.some((prefix) => key.startsWith(prefix)))
        for (const key of keys) blobs.delete(key)
        return keys.length
      })
  }
}

export const layerMemoryBlobStore = (baseUrl: string) => Layer.sync(BlobStore, () => makeMemoryBlobStore(baseUrl))
