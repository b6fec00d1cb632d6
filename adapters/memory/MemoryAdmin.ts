import { Effect, Option } from "effect"
import { type JobCursor, isAfterCursor } from "../../src/domain/cursor.js"
import type { AccountSettingsRepo } from "../../src/ports/AccountSettingsRepo.js"
import type { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { groupSpend } from "../../src/domain/spend.js"
import { DEFAULT_FAIR_WEIGHT, fairWeightOf } from "../../src/domain/fairShare.js"
import { type MemoryState, spentSince } from "./state.js"

type Keyed = { readonly createdAt: number; readonly id: string }

const newestFirst = (a: Keyed, b: Keyed) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/** Newest first, after the cursor, up to limit + 1. */
const page = <A extends Keyed>(items: Iterable<A>, after: JobCursor | undefined, limit: number): ReadonlyArray<A> =>
  [...items].filter((item) => after === undefined || isAfterCursor(item, after)).sort(newestFirst).slice(0, limit + 1)

/** Lower-cases ASCII letters only, as SQLite's LOWER does, so every store matches alike. */
const asciiLower = (text: string) => text.replace(/[A-Z]/g, (c) => c.toLowerCase())

export const adminReadRepo = (state: MemoryState): AdminReadRepo["Service"] => ({
  accounts: ({ after, limit, search }) =>
    Effect.sync(() => {
      const fragment = search === undefined ? undefined : asciiLower(search)
      const matches = [...state.accounts.values()].filter((a) =>
        fragment === undefined || asciiLower(a.name).includes(fragment) || asciiLower(a.id).includes(fragment)
      )
      return page(matches, after, limit)
    }),
  keys: (accountId) =>
    Effect.sync(() => [...state.keys.values()].filter((k) => k.accountId === accountId).sort((a, b) => -newestFirst(a, b))),
  jobs: (query) =>
    Effect.sync(() =>
      page(
        [...state.jobs.values()].filter((j) =>
          (query.accountId === undefined || j.accountId === query.accountId) &&
          (query.status === undefined || j.status === query.status) &&
          (query.model === undefined || j.model === query.model) &&
          (query.createdFrom === undefined || j.createdAt >= query.createdFrom) &&
          (query.createdBefore === undefined || j.createdAt < query.createdBefore)
        ),
        query.after,
        query.limit
      )
    ),
  deliveries: (query) =>
    Effect.sync(() =>
      page(
        [...state.deliveries.values()].filter((d) =>
          (query.accountId === undefined || d.accountId === query.accountId) &&
          (query.status === undefined || d.status === query.status)
        ),
        query.after,
        query.limit
      )
    ),
  ledger: ({ accountId, after, limit }) =>
    Effect.sync(() =>
      state.ledger
        .filter((e) => e.accountId === accountId && (after === undefined || isAfterCursor(after, e)))
        .sort((a, b) => -newestFirst(a, b))
        .slice(0, limit + 1)
    ),
  spend: ({ accountId, from, groupBy, to }) =>
    Effect.sync(() =>
      groupSpend(
        [...state.spend.values()].filter((r) => r.hour >= from && r.hour < to && (accountId === undefined || r.accountId === accountId)),
        groupBy
      )
    ),
  budgetSpend: ({ accountId, keyId, since }) =>
    Effect.sync(() => ({
      accountSpent: since.account === undefined ? null : spentSince(state, accountId, since.account),
      keySpent: since.key === undefined ? null : spentSince(state, accountId, since.key, keyId)
    })),
  stats: ({ from, limit, to }) =>
    Effect.sync(() => {
      const jobs = [...state.jobs.values()]
      const count = (status: string) => jobs.filter((j) => j.status === status).length
      const runs = jobs
        .filter((j) => j.status === "completed" && j.startedAt !== null && j.completedAt !== null && j.completedAt >= from && j.completedAt < to)
        .sort((a, b) => b.completedAt! - a.completedAt!)
        .slice(0, limit)
        .map((j) => ({ model: j.model, runMs: j.completedAt! - j.startedAt! }))
      return { pending: count("pending"), processing: count("processing"), runs }
    }),
  waitingSummary: Effect.sync(() => {
    const waiting = new Map<string, { accountId: string; model: string; version: string; count: number; headKey: number; tailKey: number; headId: string; weight: number }>()
    const running = new Map<string, { model: string; version: string; count: number }>()
    for (const job of state.jobs.values()) {
      const version = `${job.model}\u0000${job.version}`
      if (job.status === "processing") {
        const group = running.get(version)
        if (group === undefined) running.set(version, { model: job.model, version: job.version, count: 1 })
        else group.count++
        continue
      }
      if (job.status !== "pending") continue
      const key = `${job.accountId}\u0000${version}`
      const group = waiting.get(key)
      if (group === undefined) {
        const weight = fairWeightOf(state.accounts.get(job.accountId))
        waiting.set(key, { accountId: job.accountId, model: job.model, version: job.version, count: 1, headKey: job.fairKey, tailKey: job.fairKey, headId: job.id, weight })
      } else {
        group.count++
        if (job.id < group.headId) group.headId = job.id
        group.headKey = Math.min(group.headKey, job.fairKey)
        group.tailKey = Math.max(group.tailKey, job.fairKey)
      }
    }
    return { waiting: [...waiting.values()], running: [...running.values()] }
  })
})

export const accountSettingsRepo = (state: MemoryState): AccountSettingsRepo["Service"] => ({
  update: (id, patch) =>
    state.lock.withPermits(1)(Effect.sync(() => {
      const account = state.accounts.get(id)
      if (account === undefined) return Option.none()
      const defined = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined))
      const { budget: _dropped, fairShareWeight: weight, ...rest } = { ...account, ...defined }
      // Absent when there is none (or the default weight), as the SQL stores answer.
      const updated = {
        ...rest,
        ...(_dropped == null ? {} : { budget: _dropped }),
        ...(weight === undefined || weight === DEFAULT_FAIR_WEIGHT ? {} : { fairShareWeight: weight })
      }
      state.accounts.set(id, updated)
      return Option.some(updated)
    })),
  updateKeyBudget: (id, budget) =>
    state.lock.withPermits(1)(Effect.sync(() => {
      const key = state.keys.get(id)
      if (key === undefined) return Option.none()
      const { budget: _dropped, ...rest } = key
      // Absent when there is none, as the SQL stores answer.
      const updated = budget === null ? rest : { ...rest, budget }
      state.keys.set(id, updated)
      return Option.some(updated)
    }))
})
