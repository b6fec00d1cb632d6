import { Layer } from "effect"
import { type Secret, secretValue } from "../../src/domain/secret.js"
import { FILES_PATH } from "../../src/http/systemRoutes.js"
import { layerFsBlobStore } from "./FsBlobStore.js"
import { layerSignedUploadTarget } from "./SignedUploadTarget.js"

export interface LocalFilesOptions {
  /** Where outputs and uploads are written. */
  readonly dir: string
  /** The URL the engine's handler answers at (with its base path): files are served under it. */
  readonly publicUrl: string
  /** Signs upload URLs; the same value in every process of a deployment. */
  /** Signs upload URLs: a plain string or a `Redacted`. */
  readonly uploadSecret: Secret
}

/** Files on the local disk, served and received by the engine's own handler (/files, /uploads). */
export const localFiles = (options: LocalFilesOptions) => {
  const publicUrl = options.publicUrl.replace(/\/+$/, "")
  return Layer.merge(
    layerFsBlobStore({ dir: options.dir, baseUrl: `${publicUrl}${FILES_PATH}` }),
    layerSignedUploadTarget({ publicUrl, secret: secretValue(options.uploadSecret) })
  )
}
