import { Effect } from "effect"
import type { JobId } from "../../src/domain/ids.js"
import { JobLogRepo } from "../../src/ports/JobLogRepo.js"
import type { MemoryState } from "./state.js"

/** Provider progress and log lines in memory: each call holds the state's one lock, as a transaction. */
export const jobLogRepo = (state: MemoryState): JobLogRepo["Service"] =>
  JobLogRepo.of({
    record: (reports) =>
      state.lock.withPermits(1)(Effect.sync(() =>
        reports.flatMap(({ id, leaseOwner, log, progress }): Array<JobId> => {
          const stored = state.jobs.get(id)
          if (stored === undefined || stored.status !== "processing" || stored.leaseOwner !== leaseOwner) return []
          const raised = progress !== undefined && (stored.providerProgress === undefined || stored.providerProgress < progress)
          state.jobs.set(id, {
            ...stored,
            ...(raised ? { providerProgress: progress } : {}),
            ...(log === undefined ? {} : { providerLog: log.mark })
          })
          if (log !== undefined && log.lines.length > 0) {
            const kept = state.jobLogs.get(id) ?? []
            // A place taken already (a report written twice) is not taken again, as the SQL key refuses it.
            const last = kept[kept.length - 1]?.seq ?? 0
            kept.push(...log.lines.filter((line) => line.seq > last))
            state.jobLogs.set(id, kept)
          }
          return [id]
        })
      )),
    lines: (jobId, after, limit) =>
      Effect.sync(() => {
        const kept = state.jobLogs.get(jobId) ?? []
        // Places are 1, 2, ... in order: the line after place `after` is at index `after`.
        return kept.slice(Math.max(0, after), Math.max(0, after) + limit + 1)
      })
  })
