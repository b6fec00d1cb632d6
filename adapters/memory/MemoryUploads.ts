import { Effect, Option } from "effect"
import type { Upload } from "../../src/domain/upload.js"
import type { UploadRepo } from "../../src/ports/UploadRepo.js"
import type { MemoryState } from "./state.js"

export const uploadRepo = (state: MemoryState): UploadRepo["Service"] => {
  const atomically = state.lock.withPermits(1)
  /** Leases up to `limit` pending, unleased uploads that `wanted` picks, in `order`, to `workerId`. */
  const lease = (
    wanted: (u: Upload) => boolean,
    order: (u: Upload) => number,
    to: { readonly now: number; readonly limit: number; readonly workerId: string; readonly until: number }
  ) =>
    atomically(Effect.sync(() => {
      const due = [...state.uploads.values()]
        .filter((u) => u.status === "pending" && (u.leaseExpiresAt === null || u.leaseExpiresAt <= to.now) && wanted(u))
        .sort((a, b) => order(a) - order(b) || (a.id < b.id ? -1 : 1))
        .slice(0, to.limit)
        .map((u) => ({ ...u, leaseOwner: to.workerId, leaseExpiresAt: to.until }))
      for (const u of due) state.uploads.set(u.id, u)
      return due
    }))
  return {
    create: (upload) => Effect.sync(() => void state.uploads.set(upload.id, upload)),
    get: (id) => Effect.sync(() => Option.fromNullishOr(state.uploads.get(id))),
    markUploaded: (id, size) =>
      atomically(Effect.sync(() => {
        const upload = state.uploads.get(id)
        if (upload === undefined || upload.status !== "pending" || upload.size !== null) return false
        state.uploads.set(id, { ...upload, size })
        return true
      })),
    unmarkUploaded: (id) =>
      atomically(Effect.sync(() => {
        const upload = state.uploads.get(id)
        if (upload !== undefined && upload.status === "pending") state.uploads.set(id, { ...upload, size: null })
      })),
    claimExpired: ({ leaseMs, limit, now, workerId }) =>
      lease((u) => u.expiresAt <= now, (u) => u.expiresAt, { now, limit, workerId, until: now + leaseMs }),
    claimUnverified: ({ closedBy, leaseMs, limit, now, workerId }) =>
      lease(
        (u) => u.verifiedAt === null && u.uploadUrlExpiresAt <= closedBy && u.expiresAt > now,
        (u) => u.uploadUrlExpiresAt,
        { now, limit, workerId, until: now + leaseMs }
      ),
    markVerified: ({ id, now, size, workerId }) =>
      atomically(Effect.sync(() => {
        const upload = state.uploads.get(id)
        if (upload === undefined || upload.status !== "pending" || upload.leaseOwner !== workerId) return false
        state.uploads.set(id, { ...upload, size: upload.size ?? size, verifiedAt: now, leaseOwner: null, leaseExpiresAt: null })
        return true
      })),
    markExpired: (id, workerId) =>
      atomically(Effect.sync(() => {
        const upload = state.uploads.get(id)
        if (upload === undefined || upload.status !== "pending" || upload.leaseOwner !== workerId) return false
        state.uploads.set(id, { ...upload, status: "expired", leaseOwner: null, leaseExpiresAt: null })
        return true
      }))
  }
}
