import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { Upload } from "../domain/upload.js"

/**
 * Temporary uploads. The sweeper claims the ones to verify or expire under a lease, so several
 * processes share the work.
 */
export class UploadRepo extends Context.Service<UploadRepo, {
  readonly create: (upload: Upload) => Effect.Effect<void, StoreError>
  readonly get: (id: string) => Effect.Effect<Option.Option<Upload>, StoreError>
  /** Records the received size once; false unless the upload is pending and has no file yet. */
  readonly markUploaded: (id: string, size: number) => Effect.Effect<boolean, StoreError>
  /** Forgets a recorded size whose file could not be stored, so the client may PUT again. */
  readonly unmarkUploaded: (id: string) => Effect.Effect<void, StoreError>
  /** Up to `limit` pending uploads past `expiresAt` that no live lease holds, leased to `workerId`. */
  readonly claimExpired: (options: {
    readonly workerId: string
    readonly now: number
    readonly leaseMs: number
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<Upload>, StoreError>
  /**
   * Up to `limit` pending, unverified uploads whose URL closed by `closedBy` and whose lifetime
   * has not ended, that no live lease holds, leased to `workerId`.
   */
  readonly claimUnverified: (options: {
    readonly workerId: string
    readonly now: number
    readonly closedBy: number
    readonly leaseMs: number
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<Upload>, StoreError>
  /** Records the check, and the stored size if none was recorded, for the lease holder. */
  readonly markVerified: (options: {
    readonly id: string
    readonly workerId: string
    readonly now: number
    readonly size: number | null
  }) => Effect.Effect<boolean, StoreError>
  /** pending -> expired, for the lease holder, once its file is deleted. */
  readonly markExpired: (id: string, workerId: string) => Effect.Effect<boolean, StoreError>
}>()("genjobs/UploadRepo") {}
