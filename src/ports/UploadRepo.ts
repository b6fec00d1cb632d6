import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { Upload } from "../domain/upload.js"

/** Temporary uploads. The sweeper claims expired ones under a lease, so several processes share the work. */
export class UploadRepo extends Context.Tag("genjobs/UploadRepo")<UploadRepo, {
  readonly create: (upload: Upload) => Effect.Effect<void, StoreError>
  readonly get: (id: string) => Effect.Effect<Option.Option<Upload>, StoreError>
  /** Records the received size once; false unless the upload is pending and has no file yet. */
  readonly markUploaded: (id: string, size: number) => Effect.Effect<boolean, StoreError>
  /** Up to `limit` pending uploads past `expiresAt` that no live lease holds, leased to `workerId`. */
  readonly claimExpired: (options: {
    readonly workerId: string
    readonly now: number
    readonly leaseMs: number
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<Upload>, StoreError>
  /** pending -> expired, for the lease holder, once its file is deleted. */
  readonly markExpired: (id: string, workerId: string) => Effect.Effect<boolean, StoreError>
}>() {}
