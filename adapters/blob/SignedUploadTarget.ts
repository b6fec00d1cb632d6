import { Effect, Layer } from "effect"
import { signUploadGrant } from "../../src/domain/upload.js"
import { UploadTarget } from "../../src/ports/UploadTarget.js"
import { UploadSigningSecret } from "../../src/services/Uploads.js"

/**
 * Upload URLs the engine answers itself (PUT /uploads/{id}), signed with HMAC over the upload,
 * its type, its size limit, its declared size if any, and its expiry; the engine stores the
 * bytes in its BlobStore and serves them under /files. Provides the signing secret for the PUT
 * route too.
 */
export const layerSignedUploadTarget = (options: { readonly publicUrl: string; readonly secret: string }) =>
  Layer.merge(Layer.succeed(UploadSigningSecret, options.secret), Layer.succeed(UploadTarget, {
    uploadUrl: (grant) =>
      Effect.succeed(
        `${options.publicUrl}/uploads/${grant.uploadId}?` +
          new URLSearchParams({
            type: grant.contentType,
            max: String(grant.maxSize),
            ...(grant.size === null ? {} : { size: String(grant.size) }),
            expires: String(grant.expiresAt),
            sig: signUploadGrant(options.secret, grant)
          }).toString()
      ),
    fileUrl: (uploadId) => `${options.publicUrl}/files/${uploadId}`
  }))
