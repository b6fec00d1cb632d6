import { createHmac, timingSafeEqual } from "node:crypto"
import { Schema } from "effect"
import { ValidationError } from "./errors.js"
import { FileTooLarge, InvalidContentType } from "./uploadRefusals.js"

const MiB = 1024 * 1024

/** Spec 4.2 and 8: the eight accepted types and the largest file each may be, in bytes. */
export const UPLOAD_LIMITS: Readonly<Record<string, number>> = {
  "image/jpeg": 10 * MiB,
  "image/png": 10 * MiB,
  "image/webp": 10 * MiB,
  "image/gif": 10 * MiB,
  "video/mp4": 100 * MiB,
  "video/webm": 100 * MiB,
  "audio/mpeg": 50 * MiB,
  "audio/wav": 50 * MiB
}

/** Upload ids, which are also their files' keys, carry this prefix; output files never do. */
export const UPLOAD_ID_PREFIX = "upl_"

/** Spec 3.2: the upload URL works for 15 minutes; the file lives 60 minutes from creation. */
export const UPLOAD_URL_TTL_MS = 15 * 60_000
export const UPLOAD_LIFETIME_MS = 60 * 60_000

export const UploadStatus = Schema.Literals(["pending", "expired"])
export type UploadStatus = typeof UploadStatus.Type

export const Upload = Schema.Struct({
  id: Schema.String,
  accountId: Schema.String,
  filename: Schema.String,
  contentType: Schema.String,
  status: UploadStatus,
  /** Bytes received, once the client has PUT the file (or the sweeper found it in the store). */
  size: Schema.NullOr(Schema.Int),
  /** When the sweeper checked what arrived, after the upload URL stopped working. */
  verifiedAt: Schema.NullOr(Schema.Int),
  createdAt: Schema.Int,
  uploadUrlExpiresAt: Schema.Int,
  expiresAt: Schema.Int,
  leaseOwner: Schema.NullOr(Schema.String),
  leaseExpiresAt: Schema.NullOr(Schema.Int)
})
export type Upload = typeof Upload.Type

const MAX_FILENAME = 255
// Control characters (C0, DEL, C1) and both path separators make a filename malformed.
const FORBIDDEN_IN_FILENAME = /[\u0000-\u001f\u007f-\u009f/\\]/
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/

/**
 * Checks a presign request: a missing or malformed filename or content type is
 * VALIDATION_ERROR; a well-formed type outside the eight is INVALID_CONTENT_TYPE. The optional
 * size (bytes) lets the upload URL bind the exact length; above the type's limit it is
 * FILE_TOO_LARGE before anything is created.
 */
export const checkUploadRequest = (
  filename: unknown,
  contentType: unknown,
  size?: unknown
): {
  readonly filename: string
  readonly contentType: string
  readonly maxSize: number
  readonly size: number | null
} | ValidationError | InvalidContentType | FileTooLarge => {
  if (typeof filename !== "string" || filename.trim() === "") {
    return new ValidationError({ message: "filename is required", details: { field: "filename" } })
  }
  if (filename.length > MAX_FILENAME || FORBIDDEN_IN_FILENAME.test(filename) || filename === "." || filename === "..") {
    return new ValidationError({
      message: `filename must be a plain file name of at most ${MAX_FILENAME} characters, without path separators or control characters`,
      details: { field: "filename" }
    })
  }
  if (typeof contentType !== "string" || contentType.trim() === "") {
    return new ValidationError({ message: "contentType is required", details: { field: "contentType" } })
  }
  const normalised = contentType.trim().toLowerCase()
  if (normalised.length > 100 || !MEDIA_TYPE.test(normalised)) {
    return new ValidationError({ message: "contentType must be a media type such as image/png", details: { field: "contentType" } })
  }
  const maxSize = UPLOAD_LIMITS[normalised]
  if (maxSize === undefined) {
    return new InvalidContentType({ message: `contentType must be one of ${Object.keys(UPLOAD_LIMITS).join(", ")}`, details: {
      field: "contentType",
      allowed: Object.keys(UPLOAD_LIMITS)
    } })
  }
  if (size === undefined || size === null) return { filename, contentType: normalised, maxSize, size: null }
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 1) {
    return new ValidationError({ message: "size must be the file's length in bytes, a positive integer", details: { field: "size" } })
  }
  if (size > maxSize) {
    return new FileTooLarge({ message: `A ${normalised} file may be at most ${maxSize} bytes`, details: { field: "size", maxSize } })
  }
  return { filename, contentType: normalised, maxSize, size }
}

/** What the store holds for an upload, as the sweeper finds it once the upload URL has closed. */
export interface StoredFile {
  readonly size: number
  readonly contentType: string
}

/**
 * Why a stored upload must not be served, or null when it may. Presigned object-storage PUTs
 * cannot cap the length unless the client declared it, so the limits are checked again here.
 */
export const storedUploadProblem = (upload: Pick<Upload, "contentType">, file: StoredFile): string | null => {
  const limit = UPLOAD_LIMITS[upload.contentType] ?? 0
  if (file.size > limit) return `${file.size} bytes is over the ${limit}-byte limit for ${upload.contentType}`
  const type = file.contentType.split(";")[0]?.trim().toLowerCase()
  if (type !== upload.contentType) return `stored as ${file.contentType}, presigned as ${upload.contentType}`
  return null
}

/**
 * What an upload URL carries and signs: one upload, one type, one size limit, one expiry, and
 * the exact length when the client declared it at presign.
 */
export interface UploadGrant {
  readonly uploadId: string
  readonly contentType: string
  readonly maxSize: number
  readonly size: number | null
  readonly expiresAt: number
}

const grantText = (g: UploadGrant) => `${g.uploadId}\n${g.contentType}\n${g.maxSize}\n${g.size ?? ""}\n${g.expiresAt}`

export const signUploadGrant = (secret: string, grant: UploadGrant): string =>
  createHmac("sha256", secret).update(grantText(grant)).digest("hex")

export const isUploadGrantSigned = (secret: string, grant: UploadGrant, signature: string): boolean => {
  const expected = Buffer.from(signUploadGrant(secret, grant), "hex")
  const given = Buffer.from(/^[0-9a-f]{64}$/.test(signature) ? signature : "", "hex")
  return given.length === expected.length && timingSafeEqual(given, expected)
}
