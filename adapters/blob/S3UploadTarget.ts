import { PutObjectCommand } from "@aws-sdk/client-s3"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { Clock, Effect, Layer } from "effect"
import { UploadTarget } from "../../src/ports/UploadTarget.js"
import type { S3Location } from "./S3BlobStore.js"

/**
 * Presigned S3 PUT URLs: the object key, the Content-Type and, when the client declared the
 * size at presign, the exact Content-Length are part of the signature; the URL lives until the
 * upload window closes. A presigned PUT cannot carry a maximum, so without a declared size the
 * upload sweeper checks the stored object once the window has closed.
 */
export const layerS3UploadTarget = (s3: S3Location) =>
  Layer.succeed(UploadTarget, {
    uploadUrl: (grant) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.promise((): Promise<string> =>
          getSignedUrl(
            s3.client,
            new PutObjectCommand({
              Bucket: s3.bucket,
              Key: grant.uploadId,
              ContentType: grant.contentType,
              ...(grant.size === null ? {} : { ContentLength: grant.size })
            }),
            {
              expiresIn: Math.max(1, Math.floor((grant.expiresAt - now) / 1000)),
              signableHeaders: new Set(grant.size === null ? ["content-type"] : ["content-type", "content-length"])
            }
          )
        )),
    fileUrl: (uploadId) => `${s3.publicBaseUrl.replace(/\/$/, "")}/${uploadId}`
  })
