import { Layer } from "effect"
import { FILES_PATH } from "../../src/http/systemRoutes.js"
import { layerSignedUploadTarget } from "../blob/SignedUploadTarget.js"
import { layerMemoryStores } from "./layer.js"
import { layerLocalSignals } from "./LocalJobSignal.js"
import { layerMemoryBlobStore } from "./MemoryBlobStore.js"

/**
 * Every store in memory, with in-process signals: for tests and throwaway runs. Each call is a
 * store of its own (fresh: Effect 4 memoizes layers across nested provides).
 */
export const memoryStore = () => Layer.fresh(Layer.merge(layerMemoryStores, layerLocalSignals))

/** Files in memory, served and received by the engine's own handler under `publicUrl`. */
export const memoryFiles = (options: { readonly publicUrl: string; readonly uploadSecret?: string | undefined }) => {
  const publicUrl = options.publicUrl.replace(/\/+$/, "")
  return Layer.merge(
    layerMemoryBlobStore(`${publicUrl}${FILES_PATH}`),
    layerSignedUploadTarget({ publicUrl, secret: options.uploadSecret ?? "memory-upload-secret" })
  )
}
