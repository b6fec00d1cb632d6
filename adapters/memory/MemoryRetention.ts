import { Effect } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import type { Job } from "../../src/domain/job.js"
import { type RetentionFilter, RetentionRepo } from "../../src/ports/RetentionRepo.js"
import type { MemoryState } from "./state.js"

/** Retention in memory: each operation holds the state's one lock, as a transaction. */
export const retentionRepo = (state: MemoryState): RetentionRepo["Service"] => {
  const atomically = <A>(run: () => A) => state.lock.withPermits(1)(Effect.sync(run))
  const admitted = (job: Job | undefined, filter: RetentionFilter): job is Job =>
    job !== undefined && filter.statuses.includes(job.status)
  const deliveriesOf = (jobId: JobId) => [...state.deliveries.values()].filter((d) => d.jobId === jobId)

  return RetentionRepo.of({
    takeLease: (name, owner, now, expiresAt) =>
      atomically(() => {
        const held = state.leases.get(name)
        if (held !== undefined && held.owner !== owner && held.expiresAt > now) return false
        state.leases.set(name, { owner, expiresAt })
        return true
      }),

    endedJobs: ({ endedBy, limit, ...filter }) =>
      atomically(() =>
        [...state.jobs.values()]
          .filter((job) =>
            admitted(job, filter) && job.completedAt !== null && job.completedAt <= endedBy &&
            !deliveriesOf(job.id).some((d) => filter.unsentDeliveries.includes(d.status))
          )
          .sort((a, b) => a.completedAt! - b.completedAt!)
          .slice(0, limit)
          .map((job) => job.id)
      ),

    removeJobs: ({ jobIds, ...filter }) =>
      atomically(() => {
        let jobs = 0
        let deliveries = 0
        for (const id of jobIds) {
          if (!admitted(state.jobs.get(id), filter)) continue
          for (const delivery of deliveriesOf(id)) {
            if (filter.unsentDeliveries.includes(delivery.status)) continue
            state.deliveries.delete(delivery.id)
            deliveries++
          }
          if (deliveriesOf(id).length === 0 && state.jobs.delete(id)) {
            state.jobLogs.delete(id)
            jobs++
          }
        }
        return { jobs, deliveries }
      }),

    purgeIdempotency: (createdBefore, limit) =>
      atomically(() => {
        const old = [...state.idempotency].filter(([, record]) => record.createdAt < createdBefore).slice(0, limit)
        for (const [key] of old) state.idempotency.delete(key)
        return old.length
      })
  })
}
