import { Effect, Option } from "effect"
import { isAfterCursor } from "../../src/domain/cursor.js"
import type { Job } from "../../src/domain/job.js"
import type { WindowUsage } from "../../src/domain/rateLimit.js"
import type { JobStoreDriver } from "../../src/ports/JobStoreDriver.js"
import { post } from "./MemoryAccounts.js"
import type { MemoryState } from "./state.js"

const newestFirst = (a: Job, b: Job) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)
const oldestFirst = (a: Job, b: Job) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)

const leaseExpired = (job: Job, now: number) =>
  job.status === "processing" && job.leaseExpiresAt !== null && job.leaseExpiresAt <= now

/** Job storage in memory, for makeJobRepo: the state's one semaphore is the transaction. */
export const memoryJobDriver = (state: MemoryState): JobStoreDriver => {
  const jobs = () => [...state.jobs.values()]
  const idempotencyKey = (accountId: string, key: string) => `${accountId}\u0000${key}`
  // The semaphore already keeps every other writer out of a transaction: a read is a lock.
  const getJob: JobStoreDriver["getJob"] = (id) => Effect.sync(() => Option.fromNullable(state.jobs.get(id)))

  return {
    transaction: state.lock.withPermits(1),
    lockAccount: (id) => Effect.sync(() => Option.fromNullable(state.accounts.get(id))),
    findIdempotency: (accountId, key) =>
      Effect.sync(() => Option.fromNullable(state.idempotency.get(idempotencyKey(accountId, key)))),
    saveIdempotency: (accountId, key, record) =>
      Effect.sync(() => void state.idempotency.set(idempotencyKey(accountId, key), record)),
    countJobs: (accountId, statuses) =>
      Effect.sync(() => jobs().filter((j) => j.accountId === accountId && statuses.includes(j.status)).length),
    windowUsage: (accountId, model, version, since) =>
      Effect.sync((): WindowUsage => {
        const inside = jobs().filter((j) =>
          j.accountId === accountId && j.model === model && j.version === version && j.createdAt > since
        )
        return { count: inside.length, oldest: inside.length === 0 ? null : Math.min(...inside.map((j) => j.createdAt)) }
      }),
    insertJob: (job) => Effect.sync(() => void state.jobs.set(job.id, job)),
    getJob,
    lockJob: getJob,
    updateJob: (next, expected) =>
      Effect.sync(() => {
        const stored = state.jobs.get(next.id)
        if (stored === undefined || stored.status !== expected.status || stored.attempts !== expected.attempts) return false
        state.jobs.set(next.id, next)
        return true
      }),
    postLedger: ({ accountId, amountMicroCents, jobId, kind, now }) =>
      Effect.sync(() => {
        // The SQL ledger's unique (job_id, kind).
        if (state.ledger.some((e) => e.jobId === jobId && e.kind === kind)) return false
        post(state, accountId, kind, amountMicroCents, jobId, now)
        return true
      }),
    insertDelivery: (delivery) => Effect.sync(() => void state.deliveries.set(delivery.id, delivery)),
    listJobs: ({ accountId, after, limit, model, status }) =>
      Effect.sync(() =>
        jobs()
          .filter((j) =>
            j.accountId === accountId &&
            (status === undefined || j.status === status) &&
            (model === undefined || j.model === model) &&
            (after === undefined || isAfterCursor({ createdAt: j.createdAt, id: j.id }, after))
          )
          .sort(newestFirst)
          .slice(0, limit + 1)
      ),
    findExhausted: (now, maxAttempts) =>
      Effect.sync(() => jobs().filter((j) => leaseExpired(j, now) && j.attempts >= maxAttempts)),
    nextRunnable: (now) =>
      Effect.sync(() =>
        Option.fromNullable(jobs().filter((j) => j.status === "pending" || leaseExpired(j, now)).sort(oldestFirst)[0])
      )
  }
}
