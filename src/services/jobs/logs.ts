import { Effect } from "effect"
import { type StoreError, ValidationError } from "../../domain/errors.js"
import type { OperationNotAllowed, UnauthorizedAccess } from "../../domain/accessRefusals.js"
import type { Job, JobNotFound } from "../../domain/job.js"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../../domain/limits.js"
import { decodeLogCursor, encodeLogCursor } from "../../domain/logCursor.js"
import type { LogLine } from "../../domain/providerLogs.js"
import type { JobLogRepo } from "../../ports/JobLogRepo.js"
import type { Caller } from "../Auth.js"
import type { JobsDeps } from "./deps.js"
import { get } from "./reads.js"

export interface LogRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

export interface LogPage {
  readonly lines: ReadonlyArray<LogLine>
  /**
   * Where the next read goes on: after the last line of this page, or the cursor given when the
   * page is empty. Present while the job may still log, so a client following a running job's
   * log asks again with it; null once the job ended and no line follows.
   */
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

/**
 * The caller's job's provider log, oldest first, a page at a time (scope check_status). The job
 * is read as GET reads it, so another account's job is refused the same way. Bad `limit` or
 * `cursor`: VALIDATION_ERROR naming the field.
 */
export const logs = (deps: Pick<JobsDeps, "repo"> & { readonly logs: JobLogRepo["Service"] }) =>
(caller: Caller, id: string, request: LogRequest): Effect.Effect<
  LogPage,
  OperationNotAllowed | JobNotFound | UnauthorizedAccess | ValidationError | StoreError
> =>
  Effect.flatMap(get(deps)(caller, id), (job) => logPage(deps.logs)(job, request))

/** A page of a job already read (the caller's, or any account's for the admin API). */
export const logPage = (logs: JobLogRepo["Service"]) =>
(job: Pick<Job, "id" | "status">, request: LogRequest): Effect.Effect<LogPage, ValidationError | StoreError> =>
  Effect.gen(function*() {
    const limit = request.limit ?? DEFAULT_PAGE_SIZE
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
      return yield* Effect.fail(new ValidationError({ message: `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`, details: { field: "limit" } }))
    }
    const after = request.cursor === undefined ? 0 : decodeLogCursor(request.cursor)
    if (after === undefined) {
      return yield* Effect.fail(new ValidationError({ message: "cursor is not a cursor this API issued", details: { field: "cursor" } }))
    }
    const rows = yield* logs.lines(job.id, after, limit)
    const lines = rows.slice(0, limit)
    const hasMore = rows.length > limit
    const last = lines[lines.length - 1]?.seq ?? after
    const ended = job.status !== "pending" && job.status !== "processing"
    return { lines, hasMore, nextCursor: hasMore || !ended ? encodeLogCursor(last) : null }
  })
