import { fairStep } from "./fairShare.js"
import type { LimitPlan, VersionRef } from "./providerLimits.js"

/**
 * A pending job's place in the fair order, worked out from counters (docs/queues.md, "Queue
 * position and ETA"). Pending jobs are claimed in `(fairKey, id)` order; an account's waiting
 * jobs have keys spaced by its step (`floor(1_000_000 / weight)`), so the jobs of another
 * account ahead of a key can be counted from that account's first key and its step alone.
 */

/** The pending jobs of one account on one version: what the store's grouped read answers. */
export interface WaitingGroup extends VersionRef {
  readonly accountId: string
  readonly count: number
  /** The smallest and largest fair key of these jobs. */
  readonly headKey: number
  readonly tailKey: number
  /** The smallest id of these jobs (ties of keys break by id). */
  readonly headId: string
  /** The account's fair-share weight (1 when it has none). */
  readonly weight: number
}

/** Jobs of one version being processed now. */
export interface RunningGroup extends VersionRef {
  readonly count: number
}

/** The store's grouped read of its queue: pending jobs per account and version, processing per version. */
export interface WaitingSummary {
  readonly waiting: ReadonlyArray<WaitingGroup>
  readonly running: ReadonlyArray<RunningGroup>
}

/** What the queue looked like at one read of the store (`at`, epoch ms). */
export interface QueueSnapshot extends WaitingSummary {
  readonly at: number
}

/** The pending job a place is asked for. */
export interface WaitingJob extends VersionRef {
  readonly accountId: string
  readonly fairKey: number
  /**
   * What breaks the job's ties of keys with other accounts' jobs: its own group's `headId`
   * (undefined when the job is not in the read, as a job just submitted: it loses its ties).
   */
  readonly tieId?: string | undefined
}

/**
 * How many of `group`'s jobs are claimed before a job of key `key`. Exact while the group's
 * account queued its jobs back to back (keys exactly one step apart); otherwise an upper bound:
 * a gap in its keys (jobs on other versions, jobs claimed from the middle) means fewer are ahead.
 * Equal keys of two accounts break by job id; the read knows each group's smallest id only, so
 * the account whose waiting jobs began first (the smaller head id) is taken to win all its ties,
 * as it does when its jobs were submitted before the other's.
 */
export const aheadIn = (group: WaitingGroup, job: WaitingJob): number => {
  if (job.fairKey < group.headKey) return 0
  // Past the group's last key: all of it (a job not yet in the read, of its own account too).
  if (job.fairKey > group.tailKey) return group.count
  const step = fairStep(group.weight)
  const steps = Math.floor((job.fairKey - group.headKey) / step)
  // Of its own account's jobs, those before it; the job itself is one of the group.
  if (group.accountId === job.accountId) return Math.min(group.count - 1, steps)
  const tied = (job.fairKey - group.headKey) % step === 0
  if (!tied) return Math.min(group.count, steps + 1)
  return Math.min(group.count, steps + (job.tieId === undefined || group.headId < job.tieId ? 1 : 0))
}

/** A version's key in maps of versions: its model and version id. */
export const versionKey = (ref: VersionRef) => `${ref.model}\u0000${ref.version}`

/** Whether the group may hold the job: its account and version, its key within the group's keys. */
export const holds = (group: WaitingGroup, job: WaitingJob): boolean =>
  group.accountId === job.accountId && group.model === job.model && group.version === job.version &&
  job.fairKey >= group.headKey && job.fairKey <= group.tailKey

// A plan changes with the catalog only: its versions' scopes are looked up once per plan, not per read.
const scopeMaps = new WeakMap<LimitPlan, ReadonlyMap<string, ReadonlyArray<string>>>()
const scopesByVersion = (plan: LimitPlan): ReadonlyMap<string, ReadonlyArray<string>> => {
  let map = scopeMaps.get(plan)
  if (map === undefined) {
    map = new Map(plan.versions.map((version) => [versionKey(version), version.scopes]))
    scopeMaps.set(plan, map)
  }
  return map
}

/**
 * The versions whose jobs wait for the same capacity as `ref`'s: those sharing one of its limit
 * scopes when it is limited (a limit's room is what they wait for), else every unlimited version
 * (the worker pool). Answers a membership test over version keys.
 */
export const sharesCapacity = (plan: LimitPlan, ref: VersionRef): ((other: VersionRef) => boolean) => {
  const scopesOf = scopesByVersion(plan)
  const mine = scopesOf.get(versionKey(ref))
  if (mine === undefined) return (other) => !scopesOf.has(versionKey(other))
  return (other) => scopesOf.get(versionKey(other))?.some((scope) => mine.includes(scope)) ?? false
}

/*
 * A read is indexed once, on first use: its groups by owner, and per version asked about the
 * groups and running jobs of its capacity. A place then passes over its capacity's groups only,
 * with no key built per group.
 */
const owners = new WeakMap<QueueSnapshot, ReadonlyMap<string, WaitingGroup>>()
const pools = new WeakMap<QueueSnapshot, { readonly plan: LimitPlan; readonly byVersion: Map<string, Pool> }>()

interface Pool {
  readonly waiting: ReadonlyArray<WaitingGroup>
  readonly running: number
}

const ownerKey = (job: VersionRef & { readonly accountId: string }) => `${job.accountId}\u0000${job.model}\u0000${job.version}`

const ownersOf = (snapshot: QueueSnapshot): ReadonlyMap<string, WaitingGroup> => {
  let byOwner = owners.get(snapshot)
  if (byOwner === undefined) {
    byOwner = new Map(snapshot.waiting.map((group) => [ownerKey(group), group]))
    owners.set(snapshot, byOwner)
  }
  return byOwner
}

/** The read's group of the job's account and version, when it holds the job (by its key). */
export const groupOf = (snapshot: QueueSnapshot, job: WaitingJob): WaitingGroup | undefined => {
  const group = ownersOf(snapshot).get(ownerKey(job))
  return group !== undefined && holds(group, job) ? group : undefined
}

/**
 * Whether two reads hold the same waiting groups, in any order: then every job's position
 * (placeOf's `position`, which only the waiting groups and the plan decide) is the same in both.
 */
export const sameWaiting = (a: QueueSnapshot, b: QueueSnapshot): boolean => {
  if (a.waiting.length !== b.waiting.length) return false
  const byOwner = ownersOf(a)
  return b.waiting.every((group) => {
    const other = byOwner.get(ownerKey(group))
    return other !== undefined && other.count === group.count && other.headKey === group.headKey &&
      other.tailKey === group.tailKey && other.headId === group.headId && other.weight === group.weight
  })
}

/**
 * Within these places a status stream hears each change of its place at the next refresh of
 * the queue. Beyond them it hears it in its own turn, one refresh in FAR_TURNS: there, one job
 * more or less changes no decision, and a queue moving under 10,000 streams wrote 10,000 place
 * events a second, which held back the status events the streams are for (docs/decisions.md,
 * "Places beyond the first hundred told every fifth refresh").
 */
export const EVERY_CHANGE_WITHIN = 100
export const FAR_TURNS = 5

/**
 * Whether a stream last told the position `told` is told `position` now: a change, and either
 * near the head, or the stream's turn (or its first check, which corrects a place read stale).
 */
export const tellsPlace = (position: number, told: number, inTurn: boolean): boolean =>
  position !== told && (inTurn || position <= EVERY_CHANGE_WITHIN)

const poolOf = (snapshot: QueueSnapshot, plan: LimitPlan, ref: VersionRef): Pool => {
  let indexed = pools.get(snapshot)
  if (indexed === undefined || indexed.plan !== plan) {
    indexed = { plan, byVersion: new Map() }
    pools.set(snapshot, indexed)
  }
  const key = versionKey(ref)
  let pool = indexed.byVersion.get(key)
  if (pool === undefined) {
    const same = sharesCapacity(plan, ref)
    let running = 0
    for (const group of snapshot.running) if (same(group)) running += group.count
    pool = { waiting: snapshot.waiting.filter(same), running }
    indexed.byVersion.set(key, pool)
  }
  return pool
}

/** A range of times: the median and the 90th percentile (epoch ms). */
export interface TimeRange {
  readonly p50: number
  readonly p90: number
}

/** A run time's median and 90th percentile (ms). */
export interface RunTime {
  readonly p50Ms: number
  readonly p90Ms: number
}

export interface QueuePlace {
  /** 1 for the next job of its capacity to start. */
  readonly position: number
  readonly ahead: number
  readonly estimatedStartAt: TimeRange
  readonly estimatedCompletionAt: TimeRange
}

/** The operator's view of one account's jobs of one version waiting: its first and last job's places. */
export interface BoardGroup extends VersionRef {
  readonly accountId: string
  readonly waiting: number
  readonly first: QueuePlace
  readonly last: QueuePlace
}

export interface QueueBoard {
  /** When the queue was read. */
  readonly at: number
  /** Groups waiting, all of them (`groups` may hold only the first ones). */
  readonly waitingGroups: number
  readonly groups: ReadonlyArray<BoardGroup>
}

export interface PlaceInput {
  readonly now: number
  readonly snapshot: QueueSnapshot
  readonly plan: LimitPlan
  readonly job: WaitingJob
  /** The job's model's run time. */
  readonly runTime: RunTime
}

/**
 * The job's place and its estimated start and end. The capacity ahead starts jobs at the rate
 * it is observed running them: by Little's law, jobs in flight divided by the run time (with a
 * limit's starts per minute as a ceiling). With nothing in flight (workers just starting, a pool
 * idle a moment ago) its in-flight limit stands in, else one job at a time. The p90 takes the
 * slower run time for the jobs ahead, and one more of them.
 */
export const placeOf = ({ job: asked, now, plan, runTime, snapshot }: PlaceInput): QueuePlace => {
  const own = groupOf(snapshot, asked)
  const job = asked.tieId !== undefined || own === undefined ? asked : { ...asked, tieId: own.headId }
  const pool = poolOf(snapshot, plan, asked)
  let ahead = 0
  for (const group of pool.waiting) ahead += aheadIn(group, job)
  const running = pool.running
  const scopes = scopesByVersion(plan).get(versionKey(job)) ?? []
  const limits = plan.scopes.filter((scope) => scopes.includes(scope.key))
  const maxInFlight = Math.min(...limits.map((scope) => scope.maxInFlight ?? Infinity))
  const startsPerMinute = Math.min(...limits.map((scope) => scope.startsPerMinute ?? Infinity))
  const slots = running > 0 ? Math.min(running, maxInFlight) : Number.isFinite(maxInFlight) ? maxInFlight : 1
  const ceiling = startsPerMinute / 60_000
  const rate = (runMs: number) => Math.min(slots / Math.max(1, runMs), ceiling)
  const startP50 = now + Math.round(ahead / rate(runTime.p50Ms))
  const startP90 = Math.max(startP50, now + Math.round((ahead + 1) / rate(runTime.p90Ms)))
  return {
    position: ahead + 1,
    ahead,
    estimatedStartAt: { p50: startP50, p90: startP90 },
    estimatedCompletionAt: { p50: startP50 + runTime.p50Ms, p90: startP90 + runTime.p90Ms }
  }
}
