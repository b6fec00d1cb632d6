import { Clock, Context, Effect, Exit, Layer, Option, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { NotFound, type StoreError, ValidationError } from "../domain/errors.js"
import { FileTooLarge, InvalidContentType, LengthRequired, UploadAlreadyReceived, UploadUrlExpired, UploadUrlInvalid } from "../domain/uploadRefusals.js"
import {
  checkUploadRequest,
  isUploadGrantSigned,
  UPLOAD_LIFETIME_MS,
  UPLOAD_URL_TTL_MS,
  type Upload,
  type UploadGrant,
  UPLOAD_ID_PREFIX,
  UPLOAD_LIMITS
} from "../domain/upload.js"
import { BlobStore } from "../ports/BlobStore.js"
import { UploadRepo } from "../ports/UploadRepo.js"
import { UploadTarget } from "../ports/UploadTarget.js"
import type { Caller } from "./Auth.js"

/** Signs the filesystem upload URLs; every process of one deployment needs the same secret. */
export class UploadSigningSecret extends Context.Service<UploadSigningSecret, string>()("genjobs/UploadSigningSecret") {}

export interface PresignResult {
  readonly uploadUrl: string
  readonly fileUrl: string
  readonly fileId: string
  readonly expiresAt: number
  readonly maxSize: number
}

export const make = Effect.gen(function*() {
  const repo = yield* UploadRepo
  const target = yield* UploadTarget

  /** Any valid active key may upload (no scope needed); the upload belongs to the key's account. */
  const presign = (
    caller: Caller,
    body: { readonly filename?: unknown; readonly contentType?: unknown; readonly size?: unknown }
  ) =>
    Effect.gen(function*() {
      const checked = checkUploadRequest(body.filename, body.contentType, body.size)
      if ("code" in checked) return yield* Effect.fail(checked)
      const now = yield* Clock.currentTimeMillis
      const upload: Upload = {
        id: `${UPLOAD_ID_PREFIX}${randomBytes(12).toString("base64url").replace(/[-_]/g, "x")}`,
        accountId: caller.account.id,
        filename: checked.filename,
        contentType: checked.contentType,
        status: "pending",
        size: null,
        verifiedAt: null,
        createdAt: now,
        uploadUrlExpiresAt: now + UPLOAD_URL_TTL_MS,
        expiresAt: now + UPLOAD_LIFETIME_MS,
        leaseOwner: null,
        leaseExpiresAt: null
      }
      yield* repo.create(upload)
      const uploadUrl = yield* target.uploadUrl({
        uploadId: upload.id,
        contentType: upload.contentType,
        maxSize: checked.maxSize,
        size: checked.size,
        expiresAt: upload.uploadUrlExpiresAt
      })
      return {
        uploadUrl,
        fileUrl: target.fileUrl(upload.id),
        fileId: upload.id,
        expiresAt: upload.expiresAt,
        maxSize: checked.maxSize
      } satisfies PresignResult
    })

  const get = (caller: Caller, id: string): Effect.Effect<Upload & { readonly fileUrl: string }, NotFound | StoreError> =>
    Effect.gen(function*() {
      const found = yield* repo.get(id)
      if (Option.isNone(found) || found.value.accountId !== caller.account.id) {
        return yield* Effect.fail(new NotFound({ message: `No upload "${id}"`, details: { id } }))
      }
      const now = yield* Clock.currentTimeMillis
      // Past its lifetime an upload is expired even before the sweeper has deleted its file.
      const status = found.value.expiresAt <= now ? "expired" as const : found.value.status
      return { ...found.value, status, fileUrl: target.fileUrl(id) }
    })

  return { presign: Effect.fn("Uploads.presign")(presign), get: Effect.fn("Uploads.get")(get) } as const
})

export class Uploads extends Context.Service<Uploads, Effect.Success<typeof make>>()("genjobs/Uploads") {
  static readonly layer = Layer.effect(Uploads, make)
}

const sizeMismatch = (size: number) =>
  new ValidationError({ message: `This upload URL takes exactly ${size} bytes, the size given at presign`, details: { size } })

const tooLarge = (maxSize: number) =>
  new FileTooLarge({ message: `The file may be at most ${maxSize} bytes`, details: { maxSize } })

/** The body, failing as soon as it runs past `length` bytes or ends short of it. */
const exactly = <E>(body: Stream.Stream<Uint8Array, E>, length: number): Stream.Stream<Uint8Array, E | ValidationError> =>
  Stream.suspend(() => {
    const mismatch = () => new ValidationError({ message: `The body is not the ${length} bytes its Content-Length says` })
    let seen = 0
    return body.pipe(
      Stream.tap((chunk) => {
        seen += chunk.length
        return seen > length ? Effect.fail(mismatch()) : Effect.void
      }),
      Stream.concat(Stream.suspend(() => (seen === length ? Stream.empty : Stream.failSync(mismatch))))
    )
  })

/**
 * Receives a filesystem upload URL's PUT: checks the signature, the expiry, the type and the
 * length before reading anything, then streams the body into the BlobStore once. Nothing is
 * stored when a check fails or the body breaks off. Like S3, it wants a Content-Length.
 */
export const receiveUpload = <E>(
  grant: UploadGrant,
  signature: string,
  contentType: string | undefined,
  declaredLength: number | undefined,
  body: Stream.Stream<Uint8Array, E>
) =>
  Effect.gen(function*() {
    const secret = yield* UploadSigningSecret
    const repo = yield* UploadRepo
    const blobs = yield* BlobStore
    if (!isUploadGrantSigned(secret, grant, signature) || UPLOAD_LIMITS[grant.contentType] !== grant.maxSize) {
      return yield* Effect.fail(new UploadUrlInvalid({ message: "This upload URL is not one the API issued, or it was altered" }))
    }
    if ((yield* Clock.currentTimeMillis) >= grant.expiresAt) {
      return yield* Effect.fail(new UploadUrlExpired({ message: "This upload URL has expired; ask for a new one" }))
    }
    const type = contentType?.split(";")[0]?.trim().toLowerCase()
    if (type !== grant.contentType) {
      return yield* Effect.fail(
        new InvalidContentType({ message: `Send the file with Content-Type: ${grant.contentType}`, details: { expected: grant.contentType } })
      )
    }
    if (declaredLength === undefined || !Number.isSafeInteger(declaredLength) || declaredLength < 0) {
      return yield* Effect.fail(new LengthRequired({ message: "Send the file with a Content-Length header" }))
    }
    if (declaredLength > grant.maxSize) return yield* Effect.fail(tooLarge(grant.maxSize))
    if (grant.size !== null && declaredLength !== grant.size) return yield* Effect.fail(sizeMismatch(grant.size))
    const upload = yield* repo.get(grant.uploadId)
    if (Option.isNone(upload) || upload.value.status !== "pending") {
      return yield* Effect.fail(new UploadUrlExpired({ message: "This upload has expired" }))
    }
    // Claiming the upload before writing makes a second, racing PUT fail instead of overwriting.
    if (!(yield* repo.markUploaded(grant.uploadId, declaredLength))) {
      return yield* Effect.fail(new UploadAlreadyReceived({ message: "This upload URL was already used" }))
    }
    // A file that was not stored whole must not use the URL up: the client may PUT again.
    return yield* blobs.putStream(grant.uploadId, grant.contentType, exactly(body, declaredLength)).pipe(
      Effect.onExit((exit) =>
        Exit.isSuccess(exit) ? Effect.void : repo.unmarkUploaded(grant.uploadId).pipe(
          Effect.catchCause((cause) => Effect.logError("could not release an upload after a failed store", cause))
        )
      )
    )
  })
