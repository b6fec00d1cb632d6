import { Effect, type Scope } from "effect"
import type { JobId } from "../../domain/ids.js"
import { emptyLogMark, nextProgress, planLogAppend, type ProviderLogMark } from "../../domain/providerLogs.js"
import { JobEvents } from "../../ports/JobEvents.js"
import { JobLogRepo, type ProviderReport } from "../../ports/JobLogRepo.js"
import type { GenerationProvider, ProviderRequest, Running } from "../../ports/Provider.js"
import { makeWriteBatcher } from "../writeBatcher.js"

/** What a watched generation knows of its job's progress and log: as the job was claimed, then as this run wrote them. */
export interface ReportMarks {
  progress: number | undefined
  log: ProviderLogMark
  /**
   * This run's own write was just published to the job's followers: the hint comes back to the
   * watcher (at once in-process, after a NOTIFY on PostgreSQL), and is not a provider callback.
   */
  echo: boolean
}

/** The marks of a job as claimed: a run taken over from another goes on from what that one wrote. */
export const marksOf = (request: ProviderRequest): ReportMarks => ({
  progress: request.job.providerProgress,
  log: request.job.providerLog ?? emptyLogMark,
  echo: false
})

export interface ProviderReports {
  /**
   * The write a running generation's poll needs (its progress raised, new log lines kept), or
   * undefined when it brings nothing new: such a poll writes nothing. Written under the run's
   * lease, many jobs' reports to a statement (makeWriteBatcher); on success the marks move on
   * and the job's followers are hinted. A failed write is logged and left: the next poll brings
   * the same lines again (the marks did not move), and a place written twice is kept once.
   */
  readonly write: (
    marks: ReportMarks,
    target: { readonly jobId: JobId; readonly workerId: string; readonly provider: GenerationProvider },
    status: Running,
    now: number
  ) => Effect.Effect<void> | undefined
}

export const makeProviderReports: Effect.Effect<ProviderReports, never, JobLogRepo | JobEvents | Scope.Scope> = Effect.gen(function*() {
  const logs = yield* JobLogRepo
  const events = yield* JobEvents
  const record = yield* makeWriteBatcher((reports: ReadonlyArray<ProviderReport>) =>
    Effect.map(logs.record(reports), (written) => {
      const ids = new Set(written)
      return reports.map((report) => ids.has(report.id))
    }))

  return {
    write: (marks, { jobId, provider, workerId }, status, now) => {
      const progress = nextProgress(marks.progress, status.progress)
      const log = status.logs === undefined ? undefined : planLogAppend(marks.log, status.logs, provider.logSecrets ?? [], now)
      if (progress === undefined && log === undefined) return undefined
      return record({ id: jobId, leaseOwner: workerId, progress, log }).pipe(
        Effect.flatMap((written) => {
          if (!written) return Effect.void
          if (progress !== undefined) marks.progress = progress
          if (log !== undefined) marks.log = log.mark
          marks.echo = true
          return events.publish([jobId])
        }),
        Effect.catch((error) => Effect.logWarning("a job's provider progress and logs could not be written", { jobId }, error.message))
      )
    }
  }
})
