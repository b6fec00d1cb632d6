import { Schema } from "effect"

/** Fields stay unknown here so the service can answer the spec's own error codes for them. */
export const PresignBody = Schema.Struct({
  filename: Schema.optionalKey(Schema.Unknown),
  contentType: Schema.optionalKey(Schema.Unknown),
  /** Extension: the file's exact length in bytes, bound into the upload URL. */
  size: Schema.optionalKey(Schema.Unknown)
})

const envelope = <S extends Schema.Top>(data: S) =>
  Schema.Struct({ success: Schema.Literal(true), data, requestId: Schema.String })

export const PresignResponse = envelope(Schema.Struct({
  uploadUrl: Schema.String,
  fileUrl: Schema.String,
  fileId: Schema.String,
  expiresAt: Schema.String,
  maxSize: Schema.Number
}))

export const UploadResponse = envelope(Schema.Struct({
  id: Schema.String,
  filename: Schema.String,
  contentType: Schema.String,
  fileUrl: Schema.String,
  status: Schema.Literals(["pending", "expired"]),
  createdAt: Schema.String,
  expiresAt: Schema.String
}))

export const UploadIdPath = Schema.Struct({ id: Schema.String })
