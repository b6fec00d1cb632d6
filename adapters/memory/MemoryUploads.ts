import { Effect, Option } from "effect"
import type { UploadRepo } from "../../src/ports/UploadRepo.js"
import type { MemoryState } from "./state.js"

export const uploadRepo = (state: MemoryState): UploadRepo["Type"] => {
  const atomically = state.lock.withPermits(1)
  return {
    create: (upload) => Effect.sync(() => void state.uploads.set(upload.id, upload)),
    get: (id) => Effect.sync(() => Option.fromNullable(state.uploads.get(id))),
    markUploaded: (id, size) =>
      atomically(Effect.sync(() => {
        const upload = state.uploads.get(id)
        if (upload === undefined || upload.status !== "pending" || upload.size !== null) return false
        state.uploads.set(id, { ...upload, size })
        return true
      })),
    claimExpired: ({ leaseMs, limit, now, workerId }) =>
      atomically(Effect.sync(() => {
        const due = [...state.uploads.values()]
          .filter((u) => u.status === "pending" && u.expiresAt <= now && (u.leaseExpiresAt === null || u.leaseExpiresAt <= now))
          .sort((a, b) => a.expiresAt - b.expiresAt || (a.id < b.id ? -1 : 1))
          .slice(0, limit)
          .map((u) => ({ ...u, leaseOwner: workerId, leaseExpiresAt: now + leaseMs }))
        for (const u of due) state.uploads.set(u.id, u)
        return due
      })),
    claimUnverified: ({ closedBy, leaseMs, limit, now, workerId }) =>
      atomically(Effect.sync(() => {
        const due = [...state.uploads.values()]
          .filter((u) =>
            u.status === "pending" && u.verifiedAt === null && u.uploadUrlExpiresAt <= closedBy && u.expiresAt > now &&
            (u.leaseExpiresAt === null || u.leaseExpiresAt <= now)
          )
          .sort((a, b) => a.uploadUrlExpiresAt - b.uploadUrlExpiresAt || (a.id < b.id ? -1 : 1))
          .slice(0, limit)
          .map((u) => ({ ...u, leaseOwner: workerId, leaseExpiresAt: now + leaseMs }))
        for (const u of due) state.uploads.set(u.id, u)
        return due
      })),
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
