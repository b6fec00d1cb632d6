import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  PutObjectCommand,
  type S3Client
} from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import { Array as Arr, Deferred, Effect, Layer, Option, Stream } from "effect"
import { StoreError } from "../../src/domain/errors.js"
import { BlobStore, checkedPrefixes } from "../../src/ports/BlobStore.js"

export interface S3Location {
  readonly client: S3Client
  readonly bucket: string
  /** Public or CDN base URL the bucket's objects are served from. */
  readonly publicBaseUrl: string
}

/** The most keys one DeleteObjects request may name. */
const DELETE_BATCH = 1000
/** Prefixes listed at once. */
const LIST_CONCURRENCY = 8
/**
 * A streamed body goes up in parts of this size (S3's least is 5 MiB, its most 10,000 parts:
 * objects up to 78 GiB); a body that fits one part is a single PutObject.
 */
const PART_SIZE = 8 * 1024 * 1024
/**
 * Parts uploading at once. An upload holds these and the part being filled, with its pieces until
 * they are joined: 40 MiB at the most, measured.
 */
const PARTS_IN_FLIGHT = 2

const isMissing = (error: unknown) =>
  typeof error === "object" && error !== null && "name" in error && (error.name === "NoSuchKey" || error.name === "NotFound")

/** Blobs as objects in an S3-compatible bucket, served from `publicBaseUrl`. */
export const makeS3BlobStore = (s3: S3Location): BlobStore["Service"] => {
  const call = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (cause) => new StoreError({ message: `S3 ${what} failed`, cause }) })
  /** A missing object is none, any other failure a StoreError. */
  const optional = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(
      Effect.map(Option.some),
      Effect.catch((cause) =>
        isMissing(cause) ? Effect.succeed(Option.none<A>()) : Effect.fail(new StoreError({ message: `S3 ${what} failed`, cause }))
      )
    )
  /**
   * Every key under the prefix, page by page. ListObjects pages by marker (the last key seen),
   * which every S3-compatible server does alike, s3rver included: its ListObjectsV2 cannot make
   * continuation tokens on current Node.
   */
  const keysUnder = (prefix: string) =>
    Effect.gen(function*() {
      const keys: Array<string> = []
      while (true) {
        const marker = keys.at(-1)
        const page = yield* call("list", () =>
          s3.client.send(new ListObjectsCommand({ Bucket: s3.bucket, Prefix: prefix, ...(marker === undefined ? {} : { Marker: marker }) })))
        const found = (page.Contents ?? []).flatMap((object) => (object.Key === undefined ? [] : [object.Key]))
        keys.push(...found)
        if (page.IsTruncated !== true || found.length === 0) return keys
      }
    })
  const deleteKeys = (keys: ReadonlyArray<string>) =>
    call("delete", () =>
      s3.client.send(new DeleteObjectsCommand({
        Bucket: s3.bucket,
        Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true }
      }))).pipe(
        // A multi-object delete answers 200 with a list of the keys it could not delete.
        Effect.filterOrFail(
          (answer) => (answer.Errors ?? []).length === 0,
          (answer) => new StoreError({ message: `S3 delete failed for ${answer.Errors?.length} objects`, cause: answer.Errors })
        )
      )
  return {
    put: (key, blob) =>
      call("put", () =>
        s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: blob.bytes, ContentType: blob.contentType }))
      ).pipe(Effect.as(`${s3.publicBaseUrl.replace(/\/$/, "")}/${encodeURIComponent(key)}`)),
    putStream: <E>(key: string, contentType: string, body: Stream.Stream<Uint8Array, E>) =>
      Effect.gen(function*() {
        const bodyFailed = yield* Deferred.make<never, E>()
        // Failed when the put is interrupted: the body then ends in an error, and the upload
        // stops as it does for a failed body, aborting its multipart upload.
        const cut = yield* Deferred.make<never, StoreError>()
        let written = 0
        const source = Stream.toReadableStreamWith(
          body.pipe(
            Stream.tap((bytes) => Effect.sync(() => (written += bytes.length))),
            Stream.tapCause((cause) => Deferred.failCause(bodyFailed, cause)),
            Stream.interruptWhen(Deferred.await(cut))
          ),
          yield* Effect.context<never>()
        )
        const upload = new Upload({
          client: s3.client,
          params: { Bucket: s3.bucket, Key: key, Body: source, ContentType: contentType },
          partSize: PART_SIZE,
          queueSize: PARTS_IN_FLIGHT,
          leavePartsOnError: false
        })
        yield* Effect.callback<void, unknown>((resume) => {
          const done = upload.done().then(() => resume(Effect.void), (cause) => resume(Effect.fail(cause)))
          // Not `upload.abort()`: it answers at once and leaves the AbortMultipartUpload to run
          // later, unawaited (never, while the body is stalled); a process exiting on a drain
          // would skip it. This waits for the parts in flight, then for the abort.
          return Deferred.fail(cut, new StoreError({ message: "S3 put interrupted" })).pipe(Effect.andThen(Effect.promise(() => done)))
        }).pipe(
          // The body's own failure, when it failed, rather than the upload's that followed.
          Effect.catch((cause) =>
            Deferred.poll(bodyFailed).pipe(
              Effect.flatMap(Option.getOrElse((): Effect.Effect<never, StoreError | E> =>
                Effect.fail(new StoreError({ message: "S3 put failed", cause }))
              ))
            )
          ),
          // The body is read by a fiber of its own; a failed upload leaves it waiting to be read.
          Effect.ensuring(Effect.promise(() => source.cancel().catch(() => undefined)))
        )
        return written
      }),
    get: (key, range) =>
      optional("get", async () => {
        const object = await s3.client.send(new GetObjectCommand({
          Bucket: s3.bucket,
          Key: key,
          ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` })
        }))
        const body = object.Body as AsyncIterable<Uint8Array> | undefined
        // A ranged answer's Content-Length is the range's; the whole size ends its Content-Range.
        const total = Number(object.ContentRange?.split("/")[1])
        return {
          size: Number.isSafeInteger(total) ? total : object.ContentLength ?? 0,
          contentType: object.ContentType ?? "application/octet-stream",
          // Read as it is consumed; an interrupted read closes the object's connection.
          body: body === undefined
            ? Stream.empty
            : Stream.fromAsyncIterable(body, (cause) => new StoreError({ message: "S3 read failed", cause }))
        }
      }),
    stat: (key) =>
      optional("head", async () => {
        const head = await s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }))
        return { size: head.ContentLength ?? 0, contentType: head.ContentType ?? "application/octet-stream" }
      }),
    remove: (key) => call("delete", () => s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }))).pipe(Effect.asVoid),
    removeByPrefix: (prefixes) =>
      Effect.gen(function*() {
        const lists = yield* Effect.forEach(yield* checkedPrefixes(prefixes), keysUnder, { concurrency: LIST_CONCURRENCY })
        const keys = [...new Set(lists.flat())]
        yield* Effect.forEach(Arr.chunksOf(keys, DELETE_BATCH), deleteKeys, { discard: true })
        return keys.length
      })
  }
}

export const layerS3BlobStore = (s3: S3Location) => Layer.succeed(BlobStore, makeS3BlobStore(s3))
