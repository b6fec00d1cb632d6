import { Effect, Exit, Option } from "effect"
import { isAfterCursor } from "../../src/domain/cursor.js"
import { claimedJob, type Job } from "../../src/domain/job.js"
import { bucketOf, MINUTE_MS, MINUTE_WINDOW, type WindowUsage } from "../../src/domain/rateLimit.js"
import { addCounts, hourOf, NO_SPEND, rollupChange, type SpendCounts } from "../../src/domain/spend.js"
import type { JobDrivers, JobLeaseDriver } from "../../src/ports/JobLeaseDriver.js"
import type { HandOffLease } from "../../src/ports/JobRepo.js"
import { type Charged, chargeOf, type JobCharge, type JobStoreDriver, type RateKey } from "../../src/ports/JobStoreDriver.js"
import { post } from "./MemoryAccounts.js"
import { claimOrder, fairKeyOf, fairWeightOf } from "../../src/domain/fairShare.js"
import { earliestExpiry } from "./jobIndex.js"
import { changeOf } from "../../src/domain/change.js"
import { appendChanges } from "./MemoryChanges.js"
import { type MemoryState, spentSince } from "./state.js"

const newestFirst = (a: Job, b: Job) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

const leaseExpired = (job: Job, now: number) =>
  job.status === "processing" && job.leaseExpiresAt !== null && job.leaseExpiresAt <= now

/** A job a claim may take over: its lease expired with attempts left. */
const reclaimable = (job: Job, now: number, maxAttempts: number) => leaseExpired(job, now) && job.attempts < maxAttempts

const rateKey = (key: RateKey, windowMs: number) => JSON.stringify([key.accountId, key.model, key.version, windowMs])

const isOneOf = (job: Job, versions: ReadonlyArray<{ readonly model: string; readonly version: string }>) =>
  versions.some((v) => v.model === job.model && v.version === job.version)

/**
 * Jobs in memory, for makeJobRepo: the state's one semaphore is the transaction, and an undo
 * log makes it all or nothing, as a database's is. The rules write before they decide (the
 * charge takes the account's lock) and count on a refusal taking those writes back.
 */
export const memoryJobDriver = (state: MemoryState): JobDrivers => {
  let undo: Array<() => void> = []
  /** Sets `key` in `map`, remembering what to put back if the transaction fails. */
  const setIn = <K, V>(map: Map<K, V>, key: K, value: V) => {
    const had = map.has(key)
    const previous = map.get(key)
    undo.push(() => (had ? map.set(key, previous as V) : map.delete(key)))
    map.set(key, value)
  }
  const postUndoably = (...args: Parameters<typeof post> extends [unknown, ...infer R] ? R : never) => {
    const account = state.accounts.get(args[0])!
    const lines = state.ledger.length
    undo.push(() => {
      state.accounts.set(account.id, account)
      state.ledger.splice(lines)
    })
    post(state, ...args)
  }
  /**
   * The (job, kind) pairs of the ledger's lines, the SQL ledger's unique index, read up to line
   * `ledgerRead`: each settlement checks it without visiting the whole ledger. Read afresh when
   * the lines it read changed (an undo cut them back).
   */
  const ledgerKeys = new Set<string>()
  let ledgerRead = 0
  let ledgerLast: string | undefined
  const inLedger = (jobId: string, kind: string) => {
    if (ledgerRead > 0 && state.ledger[ledgerRead - 1]?.id !== ledgerLast) {
      ledgerKeys.clear()
      ledgerRead = 0
    }
    for (; ledgerRead < state.ledger.length; ledgerRead++) {
      const line = state.ledger[ledgerRead]!
      if (line.jobId !== null) ledgerKeys.add(`${line.jobId}\u0000${line.kind}`)
      ledgerLast = line.id
    }
    return ledgerKeys.has(`${jobId}\u0000${kind}`)
  }
  const transaction: JobStoreDriver["transaction"] = (effect) =>
    state.lock.withPermits(1)(Effect.suspend(() => {
      undo = []
      return effect.pipe(Effect.onExit((exit) =>
        Effect.sync(() => {
          if (Exit.isFailure(exit)) for (const revert of undo.reverse()) revert()
          undo = []
        })
      ))
    }))
  const jobs = () => [...state.jobs.values()]
  const idempotencyKey = (accountId: string, key: string) => `${accountId}\u0000${key}`
  // The semaphore already keeps every other writer out of a transaction: a read is a lock.
  const getJob: JobStoreDriver["getJob"] = (id) => Effect.sync(() => Option.fromNullishOr(state.jobs.get(id)))
  const activeOf = (accountId: string) => state.jobs.activeOf(accountId)
  /** Adds `counts` to the rollup of (account, key, model, hour of `at`). */
  const countSpend = (accountId: string, keyId: string | null, model: string, at: number, counts: SpendCounts) => {
    const hour = hourOf(at)
    const name = JSON.stringify([accountId, keyId, model, hour])
    const found = state.spend.get(name)
    setIn(state.spend, name, { accountId, keyId, model, hour, ...addCounts(found ?? NO_SPEND, counts) })
  }
  const charged = ({ accountId, costMicroCents, jobId, keyId, model, now, spendSince }: JobCharge) => {
    const account = state.accounts.get(accountId)
    if (account === undefined || account.balanceMicroCents < costMicroCents) return Option.none<Charged>()
    if (costMicroCents > 0) postUndoably(accountId, "charge", -costMicroCents, jobId, now)
    countSpend(accountId, keyId, model, now, rollupChange({ kind: "charge", amountMicroCents: costMicroCents }))
    return Option.some<Charged>({
      balanceBefore: account.balanceMicroCents,
      accountSpent: spendSince?.account === undefined ? null : spentSince(state, accountId, spendSince.account),
      keySpent: spendSince?.key === undefined ? null : spentSince(state, accountId, spendSince.key, keyId)
    })
  }
  /** The job as insertJob writes it: queued, or the hand-off's claim when nothing is runnable. */
  const inserted = (submitted: Job, handOff: HandOffLease | undefined) => {
    const job: Job = {
      ...submitted,
      fairKey: fairKeyOf({
        floor: state.jobs.firstPendingKey() ?? 0,
        lastOwn: state.jobs.lastPendingKeyOf(submitted.accountId) ?? null,
        weight: fairWeightOf(state.accounts.get(submitted.accountId))
      })
    }
    const runnable = handOff === undefined || state.jobs.hasRunnable(handOff.now, handOff.maxAttempts)
    const written = runnable ? job : claimedJob(job, handOff)
    setIn(state.jobs, job.id, written)
    return written
  }

  const store: JobStoreDriver = {
    transaction,
    lockAccount: (id) => Effect.sync(() => Option.fromNullishOr(state.accounts.get(id))),
    chargeAccount: (charge) => Effect.sync(() => charged(charge)),
    claimIdempotency: (accountId, key, record, notBefore) =>
      Effect.sync(() => {
        const stored = state.idempotency.get(idempotencyKey(accountId, key))
        if (stored !== undefined && stored.createdAt >= notBefore) return Option.some(stored)
        setIn(state.idempotency, idempotencyKey(accountId, key), record)
        return Option.none()
      }),
    activeJobs: (accountId) => Effect.sync(() => activeOf(accountId)),
    submit: (job, maxConcurrentJobs, handOff) =>
      transaction(Effect.sync(() => {
        if (activeOf(job.accountId) >= maxConcurrentJobs) return Option.none()
        return Option.map(charged(chargeOf(job)), () => inserted(job, handOff))
      })),
    readRateWindows: (key, now, windows) =>
      Effect.sync(() =>
        windows.map((window): WindowUsage => {
          const counted = [...(state.rateWindows.get(rateKey(key, window.windowMs))?.values() ?? [])]
            .filter((bucket) => bucket.oldest > now - window.windowMs)
          return counted.length === 0
            ? { count: 0, oldest: null }
            : { count: counted.reduce((n, b) => n + b.n, 0), oldest: Math.min(...counted.map((b) => b.oldest)) }
        })
      ),
    recordRateWindows: (key, now, windows) =>
      Effect.sync(() => {
        for (const window of windows) {
          const name = rateKey(key, window.windowMs)
          if (!state.rateWindows.has(name)) setIn(state.rateWindows, name, new Map())
          const buckets = state.rateWindows.get(name)!
          const bucket = buckets.get(bucketOf(window, now))
          setIn(buckets, bucketOf(window, now), { n: (bucket?.n ?? 0) + 1, oldest: Math.min(bucket?.oldest ?? now, now) })
        }
      }),
    insertJob: (job, handOff) => Effect.sync(() => inserted(job, handOff)),
    getJob,
    getJobs: (ids) => Effect.sync(() => ids.flatMap((id) => state.jobs.get(id) ?? [])),
    lockJob: getJob,
    updateJob: (next, expected, now) =>
      Effect.sync(() => {
        const stored = state.jobs.get(next.id)
        if (stored === undefined || stored.status !== expected.status || stored.attempts !== expected.attempts) return false
        setIn(state.jobs, next.id, next)
        const change = changeOf(next, now)
        if (change !== undefined) appendChanges(state, [change], undo)
        return true
      }),
    postLedger: (entry) =>
      Effect.sync(() => {
        const { accountId, amountMicroCents, jobId, kind, now } = entry
        // The SQL ledger's unique (job_id, kind).
        if (amountMicroCents !== 0 && inLedger(jobId, kind)) return false
        if (amountMicroCents !== 0) postUndoably(accountId, kind, amountMicroCents, jobId, now)
        countSpend(accountId, entry.keyId, entry.model, entry.chargedAt, rollupChange(entry))
        return true
      }),
    insertDeliveries: (deliveries) => Effect.sync(() => deliveries.forEach((delivery) => setIn(state.deliveries, delivery.id, delivery))),
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
      )
  }

  const leases: JobLeaseDriver = {
    // Called outside a transaction: it takes the state's lock as one.
    updateProviderStates: (states) =>
      transaction(Effect.sync(() =>
        states.flatMap(({ id, leaseOwner, state: provider }) => {
          const stored = state.jobs.get(id)
          if (stored === undefined || stored.status !== "processing" || stored.leaseOwner !== leaseOwner) return []
          setIn(state.jobs, id, {
            ...stored,
            providerPhase: provider.phase,
            providerHandle: provider.handle,
            providerStarts: provider.starts,
            providerRoute: provider.route ?? stored.providerRoute
          })
          return [id]
        })
      )),
    finishHeld: (endings) =>
      Effect.sync(() =>
        endings.flatMap(({ completedAt, error, id, leaseOwner, outputs, providerRoute, status }) => {
          const stored = state.jobs.get(id)
          if (stored === undefined || stored.status !== "processing" || stored.leaseOwner !== leaseOwner) return []
          const next: Job = {
            ...stored,
            status,
            outputs,
            error,
            completedAt,
            leaseOwner: null,
            leaseExpiresAt: null,
            providerRoute: providerRoute ?? stored.providerRoute
          }
          setIn(state.jobs, id, next)
          const change = changeOf(next, completedAt)
          if (change !== undefined) appendChanges(state, [change], undo)
          return [next]
        })
      ),
    pruneWindows: (now) =>
      Effect.sync(() => {
        for (const [name, buckets] of state.rateWindows) {
          const windowMs = JSON.parse(name)[3] as number
          for (const start of buckets.keys()) if (start + 2 * windowMs <= now) buckets.delete(start)
        }
        for (const buckets of state.providerStarts.values()) {
          for (const start of buckets.keys()) if (start + 2 * MINUTE_MS <= now) buckets.delete(start)
        }
      }),
    // Called outside a transaction: it takes the state's lock as one.
    claimBatch: (claim) =>
      transaction(Effect.sync(() => {
        const expired = state.jobs.takeExpired(claim.now, claim.maxAttempts, claim.limit)
        const pending = state.jobs.takePending(claim.limit - expired.length, (j) => isOneOf(j, claim.exclude))
        return [...expired, ...pending].map((job) => {
          const next = claimedJob(job, claim)
          setIn(state.jobs, job.id, next)
          return next
        })
      })),
    // The semaphore already serialises every transaction.
    lockProviderLimits: Effect.void,
    readLimitUsage: (versions, scopes, now) =>
      Effect.sync(() => ({
        inFlight: versions.map((v) => ({ ...v, count: state.jobs.processingOf(v.model, v.version) })),
        starts: scopes.map((scope) => ({
          scope,
          count: [...(state.providerStarts.get(scope)?.values() ?? [])]
            .filter((bucket) => bucket.oldest > now - MINUTE_MS)
            .reduce((n, bucket) => n + bucket.n, 0)
        }))
      })),
    anyPending: (versions) => Effect.sync(() => versions.some((v) => state.jobs.hasPending(v.model, v.version))),
    pendingOf: (versions) => Effect.sync(() => versions.flatMap((v) => state.jobs.pendingOfVersion(v.model, v.version, v.limit))),
    claimIds: (ids, claim) =>
      Effect.sync(() =>
        ids.flatMap((id) => {
          const stored = state.jobs.get(id)
          if (stored === undefined) return []

          if (!((stored.status === "pending" && !isOneOf(stored, claim.exclude)) || reclaimable(stored, claim.now, claim.maxAttempts))) return []
          const next = claimedJob(stored, claim)
          setIn(state.jobs, id, next)
          return [next]
        })
      ),
    queueGaps: ({ after, graceMs, limit, maxAttempts, now }) =>
      Effect.sync(() => ({
        pending: jobs()
          .filter((j) =>
            j.status === "pending" && j.createdAt <= now - graceMs &&
            (after === null || j.fairKey > after.fairKey || (j.fairKey === after.fairKey && j.id > after.id))
          )
          .sort(claimOrder)
          .slice(0, limit)
          .map((j) => ({ id: j.id, accountId: j.accountId, createdAt: j.createdAt, fairKey: j.fairKey })),
        expired: jobs().filter((j) => reclaimable(j, now - graceMs, maxAttempts)).sort(earliestExpiry).slice(0, limit).map((j) => ({ id: j.id, accountId: j.accountId }))
      })),
    recordStarts: (starts, now) =>
      Effect.sync(() => {
        for (const { count, scope } of starts) {
          if (!state.providerStarts.has(scope)) setIn(state.providerStarts, scope, new Map())
          const buckets = state.providerStarts.get(scope)!
          const bucket = buckets.get(bucketOf(MINUTE_WINDOW, now))
          setIn(buckets, bucketOf(MINUTE_WINDOW, now), { n: (bucket?.n ?? 0) + count, oldest: Math.min(bucket?.oldest ?? now, now) })
        }
      }),
    renewLeases: (leases, _now, leaseExpiresAt) =>
      Effect.sync(() =>
        leases.flatMap(({ id, workerId }) => {
          const stored = state.jobs.get(id)
          if (stored === undefined || stored.status !== "processing" || stored.leaseOwner !== workerId) return []
          setIn(state.jobs, id, { ...stored, leaseExpiresAt })
          return [id]
        })
      ),
    handBackLeases: (leases, now) =>
      Effect.sync(() =>
        leases.flatMap(({ id, workerId }) => {
          const stored = state.jobs.get(id)
          if (stored?.status !== "processing" || stored.leaseOwner !== workerId || stored.providerHandle === null) return []
          // What a claim of an expired lease reads (reclaimable); the claim's attempt given back.
          setIn(state.jobs, id, { ...stored, leaseOwner: null, leaseExpiresAt: now, attempts: stored.attempts - 1 })
          return [id]
        })
      ),
    returnUnstarted: (leases) =>
      Effect.sync(() =>
        leases.flatMap(({ id, workerId }) => {
          const stored = state.jobs.get(id)
          if (
            stored?.status !== "processing" || stored.leaseOwner !== workerId || stored.attempts !== 1 ||
            stored.providerPhase !== "starting" || stored.providerHandle !== null
          ) return []
          // What the first pickup wrote (claimedJob) undone: pending again, its fair key (never
          // changed by a claim) putting it back in its place in claim order.
          setIn(state.jobs, id, {
            ...stored,
            status: "pending",
            attempts: 0,
            providerPhase: null,
            providerStarts: stored.providerStarts - 1,
            leaseOwner: null,
            leaseExpiresAt: null,
            startedAt: null
          })
          return [id]
        })
      ),
    findExhausted: (now, maxAttempts, limit) =>
      Effect.sync(() => jobs().filter((j) => leaseExpired(j, now) && j.attempts >= maxAttempts).slice(0, limit)),
    takeLease: (name, owner, now, expiresAt) =>
      Effect.sync(() => {
        const held = state.leases.get(name)
        if (held !== undefined && held.owner !== owner && held.expiresAt > now) return false
        setIn(state.leases, name, { owner, expiresAt })
        return true
      }),
    // Every end is counted in place: nothing is kept apart to fold.
    foldJobEnds: () => Effect.void
  }
  return { store, leases }
}
