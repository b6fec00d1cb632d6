import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client
} from "@aws-sdk/client-s3"
import { Effect, Layer, Option, Stream } from "effect"
import { StoreError } from "../../src/domain/errors.js"
import { BlobStore } from "../../src/ports/BlobStore.js"

export interface S3Location {
  readonly client: S3Client
  readonly bucket: string
  /** Public or CDN base URL the bucket's objects are served from. */
  readonly publicBaseUrl: string
}

const isMissing = (error: unknown) =>
  typeof error === "object" && error !== null && "name" in error && (error.name === "NoSuchKey" || error.name === "NotFound")

/** Blobs as objects in an S3-compatible bucket, served from `publicBaseUrl`. */
export const makeS3BlobStore = (s3: S3Location): BlobStore["Type"] => {
  const call = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (cause) => new StoreError({ message: `S3 ${what} failed`, cause }) })
  /** A missing object is none, any other failure a StoreError. */
  const optional = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (cause) => cause }).pipe(
      Effect.map(Option.some),
      Effect.catchAll((cause) =>
        isMissing(cause) ? Effect.succeed(Option.none<A>()) : Effect.fail(new StoreError({ message: `S3 ${what} failed`, cause }))
      )
    )
  return {
    put: (key, blob) =>
      call("put", () =>
        s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: blob.bytes, ContentType: blob.contentType }))
      ).pipe(Effect.as(`${s3.publicBaseUrl.replace(/\/$/, "")}/${encodeURIComponent(key)}`)),
    // Uploads reach S3 straight from the client; what the engine streams here is small enough
    // to gather, and a single PutObject needs the length up front.
    putStream: (key, contentType, body) =>
      Stream.runCollect(body).pipe(
        Effect.map((chunks) => new Uint8Array(Buffer.concat([...chunks]))),
        Effect.flatMap((bytes) =>
          call("put", () => s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: bytes, ContentType: contentType })))
            .pipe(Effect.as(bytes.length))
        )
      ),
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
    remove: (key) => call("delete", () => s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: key }))).pipe(Effect.asVoid)
  }
}

export const layerS3BlobStore = (s3: S3Location) => Layer.succeed(BlobStore, makeS3BlobStore(s3))
