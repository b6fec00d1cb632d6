import { Context, type Effect } from "effect"
import type { UploadGrant } from "../domain/upload.js"

/**
 * Where clients PUT upload bytes and where the file is then served. The filesystem target signs
 * URLs the engine itself answers; an object-storage target hands out presigned URLs.
 */
export class UploadTarget extends Context.Service<UploadTarget, {
  readonly uploadUrl: (grant: UploadGrant) => Effect.Effect<string>
  readonly fileUrl: (uploadId: string) => string
}>()("genjobs/UploadTarget") {}
