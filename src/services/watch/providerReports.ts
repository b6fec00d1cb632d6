import { Cause, Effect, Exit, type Scope } from "effect"
import type { JobId } from "../../domain/ids.js"
import { emptyLogMark, nextProgress, planLogAppend, type ProviderLogMark } from "../../domain/providerLogs.js"
import { JobEvents } from "../../ports/JobEvents.js"
import { JobLogRepo, type ProviderReport } from "../../ports/JobLogRepo.js"
import type { GenerationProvider, ProviderRequest, Running } from "../../ports/Provider.js"

/** Reports of separate jobs written together at most (one statement). */
const MAX_REPORT_BATCH = 100

/**
 * How long the writer waits, once a report is queued, for others to join its batch. Written at
 * once, 10,000 generations in flight made a statement (and a publish) of a few reports each,
 * hundreds a second; a poll's report is read seconds apart anyway (docs/decisions.md).
 */
export const REPORT_LINGER_MS = 50

/** Who a report is for: the job, the run's lease owner, the provider (its secrets are redacted from the lines). */
export interface ReportTarget {
  readonly jobId: JobId
  readonly workerId: string
  readonly provider: GenerationProvider
}

/** A running answer that came while the generation's report was on its way, written after it. */
interface Later {
  readonly target: ReportTarget
  readonly status: Running
  readonly now: number
}

/** What a watched generation knows of its job's progress and log: as the job was claimed, then as this run wrote them. */
export interface ReportMarks {
  progress: number | undefined
  log: ProviderLogMark
  /**
   * This run's own write was just published to the job's followers: the hint comes back to the
   * watcher (at once in-process, after a NOTIFY on PostgreSQL), and is not a provider callback.
   */
  echo: boolean
  /** A report of this generation is queued or being written: the marks move once it is. */
  writing: boolean
  /** The latest running answer that came meanwhile (a provider answers its whole log each time: it holds the others'). */
  later: Later | undefined
  /** Called once nothing of the generation is left to write (`afterReport`). */
  then: (() => void) | undefined
}

/** The marks of a job as claimed: a run taken over from another goes on from what that one wrote. */
export const marksOf = (request: ProviderRequest): ReportMarks => ({
  progress: request.job.providerProgress,
  log: request.job.providerLog ?? emptyLogMark,
  echo: false,
  writing: false,
  later: undefined,
  then: undefined
})

export interface ProviderReports {
  /**
   * Queues the write a running generation's poll needs (its progress raised, new log lines
   * kept), if any, and returns at once: the poll goes back on the list without waiting for the
   * store. A poll that brings nothing new writes nothing. A generation has one report on its way
   * at most, however slow the store: an answer that comes meanwhile is kept (the latest only: a
   * provider answers its whole log on every poll, Provider.ts `Running`) and its report planned
   * from the marks that write moved, once it is written. The reports are written under the
   * run's lease, many jobs' to a statement; on success the marks move on and the jobs'
   * followers are hinted, in one publish. A failed write is logged and left: the marks did not
   * move, so the next poll brings the same lines again (a place written twice is kept once).
   */
  readonly write: (marks: ReportMarks, target: ReportTarget, status: Running, now: number) => void
  /**
   * Runs `f` once the generation's reports on their way, if any, are written: a generation's end
   * is handed to its run only after the lines of its running polls are stored, as when the poller
   * waited for them (an end written first would refuse them: the job no longer processing). A
   * report an end waits for is written without waiting for others to join it.
   */
  readonly afterReport: (marks: ReportMarks, f: () => void) => void
}

/** A queued report and the marks it moves once written. */
interface Queued {
  readonly report: ProviderReport
  readonly marks: ReportMarks
}

/**
 * The reports of a process's running generations, written by one fiber of the scope it is made
 * in: a report waits REPORT_LINGER_MS for others (none when MAX_REPORT_BATCH are queued), then
 * they go together, up to MAX_REPORT_BATCH to a statement, and no poll waits for its write. A
 * batch that fails is written again report by report, so one bad report fails alone. Closing
 * the scope stops the writer; the reports queued then are dropped (the marks did not move: a
 * later run's polls bring those lines again).
 */
export const makeProviderReports: Effect.Effect<ProviderReports, never, JobLogRepo | JobEvents | Scope.Scope> = Effect.gen(function*() {
  const logs = yield* JobLogRepo
  const events = yield* JobEvents
  /** Queues the report an answer needs against `marks`; answers whether there was one. */
  const queue = (marks: ReportMarks, { now, status, target }: Later): boolean => {
    const progress = nextProgress(marks.progress, status.progress)
    const log = status.logs === undefined ? undefined : planLogAppend(marks.log, status.logs, target.provider.logSecrets ?? [], now)
    if (progress === undefined && log === undefined) return false
    marks.writing = true
    send({ report: { id: target.jobId, leaseOwner: target.workerId, progress, log }, marks })
    return true
  }

  /** Writes `batch`; answers the ids written (a report refused by its lease is not). */
  const writeBatch = (batch: ReadonlyArray<Queued>): Effect.Effect<ReadonlyArray<JobId>> =>
    Effect.flatMap(Effect.exit(logs.record(batch.map((q) => q.report))), (exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
      if (batch.length > 1) return Effect.map(Effect.forEach(batch, (q) => writeBatch([q])), (written) => written.flat())
      return Effect.as(
        Effect.logWarning("a job's provider progress and logs could not be written", { jobId: batch[0]!.report.id }, Cause.pretty(exit.cause)),
        []
      )
    })

  /** Writes a batch, moves its marks and hints its jobs' followers; then queues what came meanwhile. */
  const writeReports = Effect.fnUntraced(function*(batch: ReadonlyArray<Queued>) {
    const written = new Set(yield* writeBatch(batch))
    const hinted: Array<JobId> = []
    for (const { marks, report } of batch) {
      marks.writing = false
      if (!written.has(report.id)) continue
      if (report.progress !== undefined) marks.progress = report.progress
      if (report.log !== undefined) marks.log = report.log.mark
      // Before the publish: an in-process follower hears it at once.
      marks.echo = true
      hinted.push(report.id)
    }
    if (hinted.length > 0) yield* events.publish(hinted)
    for (const { marks } of batch) {
      const later = marks.later
      marks.later = undefined
      if (later !== undefined && queue(marks, later)) continue
      const then = marks.then
      marks.then = undefined
      then?.()
    }
  })
  const queued: Array<Queued> = []
  /** Resumes the writer when it waits for a report. */
  let wake: (() => void) | undefined
  /** A generation's end waits for a queued report: the batch goes without lingering. */
  let urgent = false
  /** Cuts the writer's linger short. */
  let hurry: (() => void) | undefined
  const hurried = Effect.callback<void>((resume) => {
    hurry = () => {
      hurry = undefined
      resume(Effect.void)
    }
    return Effect.sync(() => {
      hurry = undefined
    })
  })
  const arrived = Effect.callback<void>((resume) => {
    if (queued.length > 0) return resume(Effect.void)
    wake = () => {
      wake = undefined
      resume(Effect.void)
    }
    return Effect.sync(() => {
      wake = undefined
    })
  })
  yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
    yield* arrived
    // One race a batch, not a report: at most one batch every REPORT_LINGER_MS lingers.
    if (queued.length < MAX_REPORT_BATCH && !urgent) yield* Effect.raceFirst(Effect.sleep(REPORT_LINGER_MS), hurried)
    urgent = false
    yield* writeReports(queued.splice(0, MAX_REPORT_BATCH))
  })))
  const send = (report: Queued) => {
    queued.push(report)
    wake?.()
  }

  return {
    write: (marks, target, status, now) => {
      if (marks.writing) marks.later = { target, status, now }
      else queue(marks, { target, status, now })
    },
    afterReport: (marks, f) => {
      if (!marks.writing) return f()
      marks.then = f
      urgent = true
      hurry?.()
    }
  }
})
