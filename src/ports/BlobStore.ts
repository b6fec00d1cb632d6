import { Context, Effect, type Option, type Stream } from "effect"
import { StoreError } from "../domain/errors.js"
import type { StoredFile } from "../domain/upload.js"

export interface Blob {
  readonly bytes: Uint8Array
  readonly contentType: string
}

/** Bytes `start` to `end`, both included, as in an HTTP Range. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

export interface BlobReader extends StoredFile {
  readonly body: Stream.Stream<Uint8Array, StoreError>
}

/** Output and upload files. Keys are flat, URL-safe names chosen by the engine. */
export class BlobStore extends Context.Service<BlobStore, {
  /** Stores the bytes and answers the public URL they are served from. */
  readonly put: (key: string, blob: Blob) => Effect.Effect<string, StoreError>
  /**
   * Stores a body that arrives in pieces, all or nothing: when the body fails (or is cut off)
   * nothing is stored under the key. Answers the number of bytes stored.
   */
  readonly putStream: <E>(
    key: string,
    contentType: string,
    body: Stream.Stream<Uint8Array, E>
  ) => Effect.Effect<number, StoreError | E>
  /**
   * The stored file with its bytes as a stream, read as it is consumed; with a range (within
   * the file), only those bytes. `size` is the whole file's.
   */
  readonly get: (key: string, range?: ByteRange) => Effect.Effect<Option.Option<BlobReader>, StoreError>
  /** Size and type without reading the bytes. */
  readonly stat: (key: string) => Effect.Effect<Option.Option<StoredFile>, StoreError>
  readonly remove: (key: string) => Effect.Effect<void, StoreError>
  /**
   * Removes every file whose key starts with one of `prefixes` (none may be empty) and answers
   * how many went. Retention removes a job's files this way, whatever their names after the prefix.
   */
  readonly removeByPrefix: (prefixes: ReadonlyArray<string>) => Effect.Effect<number, StoreError>
}>()("genjobs/BlobStore") {}

/** The prefixes of a `removeByPrefix`, refused when one is empty: it would name every file. */
export const checkedPrefixes = (prefixes: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<string>, StoreError> =>
  prefixes.includes("")
    ? Effect.fail(new StoreError({ message: "An empty prefix would remove every file; refused" }))
    : Effect.succeed(prefixes)
