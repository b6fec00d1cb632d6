import type { AccountId, JobId, RequestId } from "./ids.js"
import { isTerminal, type Job, type JobError } from "./job.js"
import { DAY_MS } from "./rateLimit.js"

/**
 * Where an entry of the changes feed stands: ordered by `txn`, then `seq`. PostgreSQL's `txn` is
 * the writing transaction's id (xid8) and `seq` a sequence drawn in it; SQLite and memory keep
 * `txn` at 0 and order by `seq` alone (docs/decisions.md, "A changes feed").
 */
export interface ChangePosition {
  readonly txn: number
  readonly seq: number
}

/** Before every entry: the feed from its start. */
export const FEED_START: ChangePosition = { txn: 0, seq: 0 }

export const comparePositions = (a: ChangePosition, b: ChangePosition): number => a.txn - b.txn || a.seq - b.seq

export const laterOf = (a: ChangePosition, b: ChangePosition): ChangePosition => (comparePositions(a, b) >= 0 ? a : b)

/** A job's ending as the feed keeps it, written in the ending's own transaction. */
export interface JobChange {
  readonly accountId: AccountId
  readonly jobId: JobId
  readonly requestId: RequestId
  readonly status: "completed" | "failed" | "cancelled"
  readonly model: string
  readonly version: string
  readonly endedAt: number
  /** What the submit charged. */
  readonly costMicroCents: number
  /** What the ending gave back: the whole cost when failed or cancelled, 0 when completed. */
  readonly refundedMicroCents: number
  readonly error: JobError | null
}

/** An entry as a read answers it. */
export interface ChangeEntry extends JobChange {
  readonly position: ChangePosition
}

/** The feed's entry of a job that just ended; undefined for any other status. */
export const changeOf = (job: Job, now: number): JobChange | undefined =>
  !isTerminal(job.status) ? undefined : {
    accountId: job.accountId,
    jobId: job.id,
    requestId: job.requestId,
    status: job.status as JobChange["status"],
    model: job.model,
    version: job.version,
    endedAt: job.completedAt ?? now,
    costMicroCents: job.costMicroCents,
    refundedMicroCents: job.status === "completed" ? 0 : job.costMicroCents,
    error: job.error
  }

/** How long entries are kept by default: a receiver down for a week can still catch up. */
export const DEFAULT_CHANGES_RETENTION_MS = 7 * DAY_MS

/** The cursor of a position, base64url-encoded so clients treat it as opaque (as the job list's). */
export const encodeChangeCursor = (position: ChangePosition): string =>
  Buffer.from(JSON.stringify([position.txn, position.seq])).toString("base64url")

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0

/** The position of a cursor this API issued; undefined for anything else. */
export const decodeChangeCursor = (text: string): ChangePosition | undefined => {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
    return Array.isArray(value) && value.length === 2 && isCount(value[0]) && isCount(value[1])
      ? { txn: value[0], seq: value[1] }
      : undefined
  } catch {
    return undefined
  }
}

/** A read of the feed: entries after `after` in feed order, and how far it is settled. */
export interface ChangeRead {
  readonly entries: ReadonlyArray<ChangeEntry>
  /**
   * A position no entry yet to be read can come at or before: every entry at or before it was
   * committed when the read ran and is in `entries` or before `after`, if `entries` is not full.
   */
  readonly settled: ChangePosition
}

/**
 * Where the next read starts after a read of up to `limit` entries after `after`: the last entry
 * when the read was full (more may follow at once), else the settled position, so a quiet
 * account's cursor moves on with the feed and never re-reads what it passed.
 */
export const nextAfter = (after: ChangePosition, read: ChangeRead, limit: number): ChangePosition => {
  const last = read.entries[read.entries.length - 1]
  const reached = last === undefined ? after : laterOf(after, last.position)
  return read.entries.length >= limit ? reached : laterOf(reached, read.settled)
}
