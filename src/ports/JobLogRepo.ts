import { Context, type Effect } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { JobId } from "../domain/ids.js"
import type { LogLine, ProviderLogMark } from "../domain/providerLogs.js"

/** What one poll of a running job's provider adds: its progress, its new log lines, or both. */
export interface ProviderReport {
  readonly id: JobId
  /** Written only while the job is processing under this worker's lease. */
  readonly leaseOwner: string
  /** The progress to show (0-100); the store keeps the stored one when it is not below it. */
  readonly progress?: number | undefined
  /** The log's mark after these lines (domain/providerLogs.ts planLogAppend) and the lines, numbered on from the stored ones. */
  readonly log?: { readonly mark: ProviderLogMark; readonly lines: ReadonlyArray<LogLine> } | undefined
}

/**
 * A running job's provider progress and log lines (issue 38). The rules (what is kept, the
 * cap, redaction, progress never moving backwards) are src/'s (domain/providerLogs.ts); a store
 * appends and reads. Lines go with their job (RetentionRepo.removeJobs deletes them).
 */
export class JobLogRepo extends Context.Service<JobLogRepo, {
  /**
   * Writes each report in one statement for them all where the store allows (one transaction
   * otherwise): the job's progress (only ever raised: a lower or equal one leaves the stored
   * one), its log mark and its lines, only where the job is processing under `leaseOwner`.
   * Answers the ids written.
   */
  readonly record: (reports: ReadonlyArray<ProviderReport>) => Effect.Effect<ReadonlyArray<JobId>, StoreError>
  /** The job's lines after place `after` (0: from the first), in order, up to `limit + 1` so callers can tell whether more follow. */
  readonly lines: (jobId: JobId, after: number, limit: number) => Effect.Effect<ReadonlyArray<LogLine>, StoreError>
}>()("genjobs/JobLogRepo") {}
