import { S3Client } from "@aws-sdk/client-s3"
import { Layer, Redacted } from "effect"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { UploadSigningSecret } from "../../src/services/Uploads.js"
import { layerS3BlobStore, type S3Location } from "./S3BlobStore.js"
import { layerS3UploadTarget } from "./S3UploadTarget.js"

export interface S3FilesOptions {
  readonly bucket: string
  readonly region?: string | undefined
  /** An S3-compatible endpoint (MinIO, R2, ...); AWS when unset. */
  readonly endpoint?: string | undefined
  readonly accessKeyId?: string | undefined
  readonly secretAccessKey?: Redacted.Redacted<string> | string | undefined
  /** Where the bucket's objects are read from (a CDN); derived from the endpoint or region when unset. */
  readonly publicUrl?: string | undefined
  readonly forcePathStyle?: boolean | undefined
  /** Signs the engine's own upload grants; the same value in every process of a deployment. */
  /** Signs upload URLs: a plain string or a `Redacted`. */
  readonly uploadSecret: Secret
}

/** The URL objects are served from when none is configured. */
export const s3PublicUrl = (options: Pick<S3FilesOptions, "bucket" | "region" | "endpoint" | "publicUrl">): string =>
  (options.publicUrl ??
    (options.endpoint === undefined
      ? `https://${options.bucket}.s3.${options.region ?? "us-east-1"}.amazonaws.com`
      : `${options.endpoint.replace(/\/+$/, "")}/${options.bucket}`)).replace(/\/+$/, "")

/** Outputs and uploads in an S3-compatible bucket; clients PUT uploads straight to it with presigned URLs. */
export const s3Files = (options: S3FilesOptions) => {
  const secretAccessKey = typeof options.secretAccessKey === "string"
    ? options.secretAccessKey
    : options.secretAccessKey === undefined ? undefined : Redacted.value(options.secretAccessKey)
  const client = new S3Client({
    region: options.region ?? "us-east-1",
    forcePathStyle: options.forcePathStyle ?? false,
    // Presigned PUTs must not carry a checksum of an empty body, or S3 refuses every upload.
    requestChecksumCalculation: "WHEN_REQUIRED",
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(options.accessKeyId !== undefined && secretAccessKey !== undefined
      ? { credentials: { accessKeyId: options.accessKeyId, secretAccessKey } }
      : {})
  })
  const location: S3Location = { client, bucket: options.bucket, publicBaseUrl: s3PublicUrl(options) }
  return Layer.mergeAll(
    layerS3BlobStore(location),
    layerS3UploadTarget(location),
    Layer.succeed(UploadSigningSecret, secretValue(options.uploadSecret))
  )
}
