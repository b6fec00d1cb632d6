import { Schema } from "effect"
import { ValidationError } from "./errors.js"

export const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

/** The UTC hour (its start, epoch ms) a rollup counts a job in: the hour the job was charged. */
export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS

/** The longest range one spend read covers: a year and a day, so a read stays bounded. */
export const MAX_SPEND_RANGE_DAYS = 366
/** Without `from`, a read covers the last 30 days. */
export const DEFAULT_SPEND_RANGE_DAYS = 30

/** What spend is grouped by; `day` and `hour` are UTC. Up to two at once (`day,model`). */
export const SpendDimension = Schema.Literals(["account", "key", "model", "day", "hour"])
export type SpendDimension = typeof SpendDimension.Type

/** The counts a rollup keeps per account, key, model and hour, and that a group sums. */
export interface SpendCounts {
  /** What the jobs were charged (positive). */
  readonly chargedMicroCents: number
  /** What was given back of those charges (positive). */
  readonly refundedMicroCents: number
  /** Jobs submitted, free ones included. */
  readonly jobs: number
  readonly failed: number
  readonly cancelled: number
}

/** One rollup row. `keyId` is null for jobs submitted before keys were recorded on jobs. */
export interface SpendRollup extends SpendCounts {
  readonly accountId: string
  readonly keyId: string | null
  readonly model: string
  readonly hour: number
}

/** One group of a spend read: the dimensions asked for, and the sums of its rollups. */
export interface SpendGroup extends SpendCounts {
  readonly account?: string
  readonly key?: string | null
  readonly model?: string
  /** Start of the UTC day or hour, epoch ms. */
  readonly day?: number
  readonly hour?: number
}

export interface SpendQuery {
  /** Rollup hours starting at or after `from` and before `to` (epoch ms). */
  readonly from: number
  readonly to: number
  readonly groupBy: ReadonlyArray<SpendDimension>
  readonly accountId?: string | undefined
}

/** A rollup's change for one ledger line (or a free job's charge): the job's charge or its refund. */
export const rollupChange = (change: {
  readonly kind: "charge" | "refund"
  readonly amountMicroCents: number
  readonly outcome?: "failed" | "cancelled" | undefined
}): SpendCounts => ({
  chargedMicroCents: change.kind === "charge" ? Math.abs(change.amountMicroCents) : 0,
  refundedMicroCents: change.kind === "refund" ? Math.abs(change.amountMicroCents) : 0,
  jobs: change.kind === "charge" ? 1 : 0,
  failed: change.outcome === "failed" ? 1 : 0,
  cancelled: change.outcome === "cancelled" ? 1 : 0
})

export const addCounts = (a: SpendCounts, b: SpendCounts): SpendCounts => ({
  chargedMicroCents: a.chargedMicroCents + b.chargedMicroCents,
  refundedMicroCents: a.refundedMicroCents + b.refundedMicroCents,
  jobs: a.jobs + b.jobs,
  failed: a.failed + b.failed,
  cancelled: a.cancelled + b.cancelled
})

export const NO_SPEND: SpendCounts = { chargedMicroCents: 0, refundedMicroCents: 0, jobs: 0, failed: 0, cancelled: 0 }

/** The group a rollup falls in. */
export const groupOf = (row: SpendRollup, groupBy: ReadonlyArray<SpendDimension>): Omit<SpendGroup, keyof SpendCounts> => ({
  ...(groupBy.includes("account") ? { account: row.accountId } : {}),
  ...(groupBy.includes("key") ? { key: row.keyId } : {}),
  ...(groupBy.includes("model") ? { model: row.model } : {}),
  ...(groupBy.includes("day") ? { day: Math.floor(row.hour / DAY_MS) * DAY_MS } : {}),
  ...(groupBy.includes("hour") ? { hour: row.hour } : {})
})

/** Sums rollups by the dimensions asked for, ordered by them; what every store answers. */
export const groupSpend = (rows: ReadonlyArray<SpendRollup>, groupBy: ReadonlyArray<SpendDimension>): ReadonlyArray<SpendGroup> => {
  const groups = new Map<string, SpendGroup>()
  for (const row of rows) {
    const dims = groupOf(row, groupBy)
    const name = JSON.stringify(dims)
    const found = groups.get(name)
    groups.set(name, { ...dims, ...addCounts(found ?? NO_SPEND, row) })
  }
  return [...groups.values()].sort(compareGroups(groupBy))
}

/** Groups in the order of their dimensions as asked, times ascending, null keys first. */
export const compareGroups = (groupBy: ReadonlyArray<SpendDimension>) => (a: SpendGroup, b: SpendGroup): number => {
  for (const dim of groupBy) {
    const x = a[dim] ?? null
    const y = b[dim] ?? null
    if (x === y) continue
    if (x === null) return -1
    if (y === null) return 1
    return x < y ? -1 : 1
  }
  return 0
}

/** The read's range and grouping checked; refused with the field at fault. */
export const checkSpendQuery = (query: SpendQuery, allowed: ReadonlyArray<SpendDimension>): ValidationError | undefined => {
  const invalid = (field: string, message: string) => new ValidationError({ message, details: { field } })
  if (query.groupBy.length === 0 || query.groupBy.length > 2) return invalid("groupBy", "groupBy takes one or two dimensions, comma-separated")
  const refused = query.groupBy.filter((dim) => !allowed.includes(dim))
  if (refused.length > 0) return invalid("groupBy", `groupBy takes ${allowed.join(", ")}; not ${refused.join(", ")}`)
  if (new Set(query.groupBy).size !== query.groupBy.length) return invalid("groupBy", "groupBy names a dimension twice")
  if (query.from >= query.to) return invalid("from", "from must be before to")
  if (query.to - query.from > MAX_SPEND_RANGE_DAYS * DAY_MS) {
    return invalid("to", `A spend read covers at most ${MAX_SPEND_RANGE_DAYS} days`)
  }
  return undefined
}
