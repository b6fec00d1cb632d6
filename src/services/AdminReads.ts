import { Clock, Context, Effect, Layer, Option } from "effect"
import type { ApiKey, LedgerEntry } from "../domain/account.js"
import { AuditAction, type AuditEntry } from "../domain/audit.js"
import { NotFound, type StoreError, ValidationError } from "../domain/errors.js"
import type { AccountId, JobId } from "../domain/ids.js"
import { type Job, JobNotFound, JobStatus } from "../domain/job.js"
import { MAX_PAGE_SIZE } from "../domain/limits.js"
import {
  checkSpendQuery,
  DEFAULT_SPEND_RANGE_DAYS,
  HOUR_MS,
  hourOf,
  MAX_SPEND_RANGE_DAYS,
  type SpendDimension,
  type SpendGroup,
  type SpendQuery
} from "../domain/spend.js"
import { MAX_STATS_RUNS, runTimesByModel, type Stats } from "../domain/stats.js"
import { DeliveryStatus, type WebhookDelivery } from "../domain/webhook.js"
import type { Account } from "../domain/account.js"
import { AccountRepo } from "../ports/AccountRepo.js"
import { AdminReadRepo } from "../ports/AdminReadRepo.js"
import { AuditLog } from "../ports/AuditLog.js"
import { JobLogRepo } from "../ports/JobLogRepo.js"
import { JobRepo } from "../ports/JobRepo.js"
import { type LogPage, logPage, type LogRequest } from "./jobs/logs.js"
import { readPageRequest, toPage } from "./paging.js"

export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

interface PageRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

/** The longest search fragment taken: longer ones cannot match a name of at most 200 characters. */
const MAX_SEARCH_LENGTH = 200

const invalid = (field: string, message: string) => new ValidationError({ message, details: { field } })

/** An ISO 8601 time (at least a date) as epoch ms; anything else is refused with the field's name. */
const readTime = (field: string, value: string | undefined): Effect.Effect<number | undefined, ValidationError> => {
  if (value === undefined) return Effect.succeed(undefined)
  const ms = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN
  return Number.isNaN(ms) ? Effect.fail(invalid(field, `${field} must be an ISO 8601 time, like 2025-01-31T12:00:00Z`)) : Effect.succeed(ms)
}

/** A spend read's parameters as the API takes them: ISO times and a comma-separated groupBy. */
export interface SpendRequest {
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly groupBy?: string | undefined
}

/**
 * A spend read checked: `to` defaults to the end of the current hour, `from` to 30 days before
 * `to`, `groupBy` to `day`; the range is at most MAX_SPEND_RANGE_DAYS.
 */
export const readSpendQuery = (
  request: SpendRequest,
  accountId: string | undefined,
  allowed: ReadonlyArray<SpendDimension>
): Effect.Effect<SpendQuery, ValidationError> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const to = (yield* readTime("to", request.to)) ?? hourOf(now) + HOUR_MS
    const from = (yield* readTime("from", request.from)) ?? to - DEFAULT_SPEND_RANGE_DAYS * 86_400_000
    const groupBy = (request.groupBy ?? "day").split(",").map((dim) => dim.trim()) as Array<SpendDimension>
    const query: SpendQuery = { from, to, groupBy, accountId }
    const refusal = checkSpendQuery(query, allowed)
    return refusal === undefined ? query : yield* Effect.fail(refusal)
  })

/** What the operator reads across accounts: accounts, keys, jobs, deliveries, ledgers, spend and the audit log. */
export const make = Effect.gen(function*() {
  const repo = yield* AdminReadRepo
  const audit = yield* AuditLog
  const jobRepo = yield* JobRepo
  const accountRepo = yield* AccountRepo
  const jobLogs = logPage(yield* JobLogRepo)

  const account = (id: string): Effect.Effect<Account, NotFound | StoreError> =>
    accountRepo.get(id as AccountId).pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(new NotFound({ message: `No account "${id}"`, details: { accountId: id } })),
        onSome: Effect.succeed
      }))
    )

  const accounts = (request: PageRequest & { readonly search?: string | undefined }): Effect.Effect<Page<Account>, ValidationError | StoreError> =>
    Effect.gen(function*() {
      const { after, limit } = yield* readPageRequest(request, [])
      const search = request.search === undefined || request.search === "" ? undefined : request.search
      if (search !== undefined && search.length > MAX_SEARCH_LENGTH) {
        return yield* Effect.fail(invalid("search", `search must be at most ${MAX_SEARCH_LENGTH} characters`))
      }
      return toPage(yield* repo.accounts({ search, after, limit }), limit)
    })

  const keys = (accountId: string): Effect.Effect<ReadonlyArray<ApiKey>, NotFound | StoreError> =>
    Effect.flatMap(account(accountId), (found) => repo.keys(found.id))

  const jobs = (
    request: PageRequest & {
      readonly accountId?: string | undefined
      readonly status?: string | undefined
      readonly model?: string | undefined
      readonly createdFrom?: string | undefined
      readonly createdBefore?: string | undefined
    }
  ): Effect.Effect<Page<Job>, ValidationError | StoreError> =>
    Effect.gen(function*() {
      const { after, limit, status } = yield* readPageRequest(request, JobStatus.literals)
      const createdFrom = yield* readTime("createdFrom", request.createdFrom)
      const createdBefore = yield* readTime("createdBefore", request.createdBefore)
      if (createdFrom !== undefined && createdBefore !== undefined && createdFrom >= createdBefore) {
        return yield* Effect.fail(invalid("createdBefore", "createdBefore must be later than createdFrom"))
      }
      const rows = yield* repo.jobs({
        accountId: request.accountId,
        status,
        model: request.model,
        createdFrom,
        createdBefore,
        after,
        limit
      })
      return toPage(rows, limit)
    })

  const job = (id: string): Effect.Effect<Job, JobNotFound | StoreError> =>
    jobRepo.get(id as JobId).pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(new JobNotFound({ message: `No job "${id}"`, details: { jobId: id } })),
        onSome: Effect.succeed
      }))
    )

  const deliveries = (
    request: PageRequest & { readonly accountId?: string | undefined; readonly status?: string | undefined }
  ): Effect.Effect<Page<WebhookDelivery>, ValidationError | StoreError> =>
    Effect.gen(function*() {
      const { after, limit, status } = yield* readPageRequest(request, DeliveryStatus.literals)
      return toPage(yield* repo.deliveries({ accountId: request.accountId, status, after, limit }), limit)
    })

  /**
   * An account's ledger, oldest first like a statement. Pages hold 100 entries unless asked
   * otherwise, so a short ledger comes whole in one answer.
   */
  const ledger = (accountId: string, request: PageRequest): Effect.Effect<Page<LedgerEntry>, ValidationError | NotFound | StoreError> =>
    Effect.gen(function*() {
      const { after, limit } = yield* readPageRequest({ ...request, limit: request.limit ?? MAX_PAGE_SIZE }, [])
      const found = yield* account(accountId)
      return toPage(yield* repo.ledger({ accountId: found.id, after, limit }), limit)
    })

  const auditLog = (
    request: PageRequest & { readonly actor?: string | undefined; readonly action?: string | undefined; readonly target?: string | undefined }
  ): Effect.Effect<Page<AuditEntry>, ValidationError | StoreError> =>
    Effect.gen(function*() {
      const { after, limit } = yield* readPageRequest(request, [])
      const action = request.action
      if (action !== undefined && !AuditAction.literals.includes(action as AuditAction)) {
        return yield* Effect.fail(invalid("action", `action must be one of ${AuditAction.literals.join(", ")}`))
      }
      const rows = yield* audit.list({ actor: request.actor, action: action as AuditAction | undefined, target: request.target, after, limit })
      return toPage(rows, limit)
    })

  /** Spend across accounts, or of one (NOT_FOUND when it does not exist), grouped as asked. */
  const spend = (
    request: SpendRequest & { readonly accountId?: string | undefined }
  ): Effect.Effect<{ readonly query: SpendQuery; readonly groups: ReadonlyArray<SpendGroup> }, ValidationError | NotFound | StoreError> =>
    Effect.gen(function*() {
      const query = yield* readSpendQuery(request, request.accountId, ["account", "key", "model", "day", "hour"])
      if (request.accountId !== undefined) yield* account(request.accountId)
      return { query, groups: yield* repo.spend(query) }
    })

  /**
   * Jobs pending and processing now, and p50/p95 run time per model of the jobs completed in the
   * range (the last 24 hours unless asked; at most 366 days).
   */
  const stats = (request: { readonly from?: string | undefined; readonly to?: string | undefined }): Effect.Effect<Stats, ValidationError | StoreError> =>
    Effect.gen(function*() {
      const at = yield* Clock.currentTimeMillis
      // `to` is exclusive: by default the range ends just after now, so a job completed in this
      // very millisecond is counted.
      const to = (yield* readTime("to", request.to)) ?? at + 1
      const from = (yield* readTime("from", request.from)) ?? to - 86_400_000
      if (from >= to) return yield* Effect.fail(invalid("to", "to must be later than from"))
      if (to - from > MAX_SPEND_RANGE_DAYS * 86_400_000) {
        return yield* Effect.fail(invalid("from", `The range must be at most ${MAX_SPEND_RANGE_DAYS} days`))
      }
      const read = yield* repo.stats({ from, to, limit: MAX_STATS_RUNS })
      return { at, from, to, pending: read.pending, processing: read.processing, runTimes: runTimesByModel(read.runs) }
    })

  return {
    accounts: Effect.fn("AdminReads.accounts")(accounts),
    keys: Effect.fn("AdminReads.keys")(keys),
    jobs: Effect.fn("AdminReads.jobs")(jobs),
    job: Effect.fn("AdminReads.job")(job),
    /** Any account's job's provider log, paged as the owner's GET /v1/jobs/{jobId}/logs. */
    jobLogs: Effect.fn("AdminReads.jobLogs")((id: string, request: LogRequest): Effect.Effect<LogPage, JobNotFound | ValidationError | StoreError> =>
      Effect.flatMap(job(id), (found) => jobLogs(found, request))),
    deliveries: Effect.fn("AdminReads.deliveries")(deliveries),
    ledger: Effect.fn("AdminReads.ledger")(ledger),
    spend: Effect.fn("AdminReads.spend")(spend),
    stats: Effect.fn("AdminReads.stats")(stats),
    auditLog: Effect.fn("AdminReads.auditLog")(auditLog),
  } as const
})

export class AdminReads extends Context.Service<AdminReads, Effect.Success<typeof make>>()("genjobs/AdminReads") {
  static readonly layer = Layer.effect(AdminReads, make)
}
