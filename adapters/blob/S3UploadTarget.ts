import { PutObjectCommand } from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { Clock, Effect, Layer } from "effect"
import { UploadTarget } from "../../src/ports/UploadTarget.js"
import type { S3Location } from "./S3BlobStore.js"

/**
 * Presigned S3 PUT URLs: the object key and the Content-Type are part of the signature, and the
 * URL lives until the upload window closes.
 */
export const layerS3UploadTarget = (s3: S3Location) =>
  Layer.succeed(UploadTarget, {
    uploadUrl: (grant) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.promise((): Promise<string> =>
          getSignedUrl(
            s3.client,
            new PutObjectCommand({ Bucket: s3.bucket, Key: grant.uploadId, ContentType: grant.contentType }),
            { expiresIn: Math.max(1, Math.floor((grant.expiresAt - now) / 1000)), signableHeaders: new Set(["content-type"]) }
          )
        )),
    fileUrl: (uploadId) => `${s3.publicBaseUrl.replace(/\/$/, "")}/${uploadId}`
  })
