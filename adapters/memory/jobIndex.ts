import { claimOrder } from "../../src/domain/fairShare.js"
import { activeStatuses, type Job } from "../../src/domain/job.js"

/** An account's pending jobs, last fair key first: the key its next job follows. */
const lastKeyFirst = (a: Job, b: Job) => b.fairKey - a.fairKey

/** Leases that expire first, first (only jobs with a lease are kept in that order). */
export const earliestExpiry = (a: Job, b: Job) => a.leaseExpiresAt! - b.leaseExpiresAt!

/** Below this many entries a heap is never compacted: the stale ones cost less than the copy. */
const COMPACT_FLOOR = 1024

/**
 * A binary min-heap of job versions in `order`. Entries are never removed when a job changes:
 * a popped entry counts only if it is still the stored version (`current`), and the heap is
 * compacted once it holds more than twice `bound()` (the jobs stored, more than its live
 * entries) entries, so it stays within a constant factor of them.
 */
class JobHeap {
  private items: Array<Job> = []

  constructor(
    private readonly order: (a: Job, b: Job) => number,
    private readonly current: (job: Job) => boolean,
    private readonly bound: () => number
  ) {}

  push(job: Job) {
    if (this.items.length > COMPACT_FLOOR + 2 * this.bound()) this.compact()
    this.items.push(job)
    this.up(this.items.length - 1)
  }

  /** The first current entry, stale ones above it dropped on the way. */
  peek(): Job | undefined {
    while (this.items.length > 0 && !this.current(this.items[0]!)) this.removeTop()
    return this.items[0]
  }

  /** Removes and answers the first current entry. */
  pop(): Job | undefined {
    const top = this.peek()
    if (top !== undefined) this.removeTop()
    return top
  }

  private removeTop() {
    const last = this.items.pop()!
    if (this.items.length > 0) {
      this.items[0] = last
      this.down(0)
    }
  }

  /** Keeps the current entries only. */
  private compact() {
    this.items = this.items.filter(this.current)
    for (let at = (this.items.length >> 1) - 1; at >= 0; at--) this.down(at)
  }

  private up(at: number) {
    const items = this.items
    const job = items[at]!
    while (at > 0) {
      const parent = (at - 1) >> 1
      if (this.order(job, items[parent]!) >= 0) break
      items[at] = items[parent]!
      at = parent
    }
    items[at] = job
  }

  private down(at: number) {
    const items = this.items
    const job = items[at]!
    const half = items.length >> 1
    while (at < half) {
      let child = 2 * at + 1
      if (child + 1 < items.length && this.order(items[child + 1]!, items[child]!) < 0) child++
      if (this.order(items[child]!, job) >= 0) break
      items[at] = items[child]!
      at = child
    }
    items[at] = job
  }
}

/** A version's key in the per-version index: its model's slug and version id joined by a NUL, which no slug holds. */
const versionKey = (model: string, version: string) => `${model}\u0000${version}`

/** A group's pending jobs in a heap, with their count to bound it. */
interface PendingGroup {
  readonly heap: JobHeap
  count: number
}

/**
 * The memory store's jobs by id, with what a claim looks for kept in order as they are written:
 * pending jobs in claim order (fairKey, id), each account's pending jobs last key first (the
 * key its next submit follows), each version's pending jobs in claim order and its processing
 * jobs counted (a limited claim's reads), leased jobs by expiry (and each account's active jobs
 * counted). A claim then takes the few jobs it needs in O(taken log N) instead of visiting every
 * job held. Every write goes through `set` (the transaction's undo too), so no writer can forget
 * the index. A version written twice (an undo puts an earlier one back) is in a heap twice: the
 * takes answer each job once.
 */
export class IndexedJobs extends Map<string, Job> {
  private readonly isCurrent = (job: Job) => super.get(job.id) === job
  private readonly stored = () => super.size
  private readonly pending = new JobHeap(claimOrder, this.isCurrent, this.stored)
  private readonly isPending = (job: Job) => this.isCurrent(job) && job.status === "pending"
  /** Each account's pending jobs by last key, with its count of pending jobs to bound the heap. */
  private readonly pendingByAccount = new Map<string, PendingGroup>()
  /** Each version's pending jobs in claim order (versionKey). */
  private readonly pendingByVersion = new Map<string, PendingGroup>()
  /** Each version's processing jobs (versionKey). */
  private readonly processingByVersion = new Map<string, number>()
  private readonly leased = new JobHeap(earliestExpiry, this.isCurrent, this.stored)

  /** Pending and processing jobs by account: a submit checks the account's limit without a scan. */
  private readonly active = new Map<string, number>()

  override set(id: string, job: Job): this {
    this.count(super.get(id), -1)
    super.set(id, job)
    this.count(job, 1)
    if (job.status === "pending") {
      this.pending.push(job)
      this.pendingByAccount.get(job.accountId)!.heap.push(job)
      this.pendingByVersion.get(versionKey(job.model, job.version))!.heap.push(job)
    } else if (job.status === "processing" && job.leaseExpiresAt !== null) this.leased.push(job)
    return this
  }

  override delete(id: string): boolean {
    this.count(super.get(id), -1)
    return super.delete(id)
  }

  override clear(): void {
    this.active.clear()
    this.pendingByAccount.clear()
    this.pendingByVersion.clear()
    this.processingByVersion.clear()
    super.clear()
  }

  private count(job: Job | undefined, by: 1 | -1) {
    if (job === undefined) return
    this.countActive(job, by)
    if (job.status === "pending") {
      this.countPending(this.pendingByAccount, job.accountId, lastKeyFirst, by)
      this.countPending(this.pendingByVersion, versionKey(job.model, job.version), claimOrder, by)
    } else if (job.status === "processing") {
      const key = versionKey(job.model, job.version)
      const n = (this.processingByVersion.get(key) ?? 0) + by
      if (n === 0) this.processingByVersion.delete(key)
      else this.processingByVersion.set(key, n)
    }
  }

  /** The smallest fair key among pending jobs; undefined when none waits. */
  firstPendingKey(): number | undefined {
    return this.pending.peek()?.fairKey
  }

  /** The largest fair key among the account's pending jobs; undefined when none waits. */
  lastPendingKeyOf(accountId: string): number | undefined {
    return this.pendingByAccount.get(accountId)?.heap.peek()?.fairKey
  }

  private countPending(groups: Map<string, PendingGroup>, key: string, order: (a: Job, b: Job) => number, by: 1 | -1) {
    let group = groups.get(key)
    if (group === undefined) {
      const made: PendingGroup = { count: 0, heap: new JobHeap(order, this.isPending, () => made.count) }
      groups.set(key, made)
      group = made
    }
    group.count += by
    if (group.count === 0) groups.delete(key)
  }

  /** The account's jobs pending or processing. */
  activeOf(accountId: string): number {
    return this.active.get(accountId) ?? 0
  }

  /** The version's jobs processing. */
  processingOf(model: string, version: string): number {
    return this.processingByVersion.get(versionKey(model, version)) ?? 0
  }

  /** Whether the version has a pending job. */
  hasPending(model: string, version: string): boolean {
    return this.pendingByVersion.has(versionKey(model, version))
  }

  /** Up to `limit` of the version's pending jobs in claim order; they stay in the index (a read). */
  pendingOfVersion(model: string, version: string, limit: number): Array<Job> {
    const heap = this.pendingByVersion.get(versionKey(model, version))?.heap
    if (heap === undefined) return []
    const read = new Map<string, Job>()
    const popped: Array<Job> = []
    while (read.size < limit) {
      const job = heap.pop()
      if (job === undefined) break
      popped.push(job)
      read.set(job.id, job)
    }
    for (const job of popped) heap.push(job)
    return [...read.values()]
  }

  private countActive(job: Job, by: 1 | -1) {
    if (!activeStatuses.includes(job.status)) return
    const n = (this.active.get(job.accountId) ?? 0) + by
    if (n === 0) this.active.delete(job.accountId)
    else this.active.set(job.accountId, n)
  }

  /**
   * Up to `limit` jobs whose lease expired by `now` with attempts left, earliest expiry first.
   * They leave the index: the caller writes each job's next version.
   */
  takeExpired(now: number, maxAttempts: number, limit: number): Array<Job> {
    const taken = new Map<string, Job>()
    const exhausted: Array<Job> = []
    for (let top = this.leased.peek(); taken.size < limit && top !== undefined && top.leaseExpiresAt! <= now; top = this.leased.peek()) {
      this.leased.pop()
      if (top.attempts < maxAttempts) taken.set(top.id, top)
      else exhausted.push(top)
    }
    // Jobs out of attempts stay for the sweep that fails them (findExhausted).
    for (const job of exhausted) this.leased.push(job)
    return [...taken.values()]
  }

  /** Up to `limit` pending jobs in claim order, none of which `skip`; they leave the index. */
  takePending(limit: number, skip: (job: Job) => boolean): Array<Job> {
    const taken = new Map<string, Job>()
    const skipped: Array<Job> = []
    while (taken.size < limit) {
      const job = this.pending.pop()
      if (job === undefined) break
      if (skip(job)) skipped.push(job)
      else taken.set(job.id, job)
    }
    for (const job of skipped) this.pending.push(job)
    return [...taken.values()]
  }

  /** Whether a claim at `now` would find a job: one pending, or one whose lease expired with attempts left. */
  hasRunnable(now: number, maxAttempts: number): boolean {
    if (this.pending.peek() !== undefined) return true
    const expired = this.takeExpired(now, maxAttempts, 1)
    for (const job of expired) this.leased.push(job)
    return expired.length > 0
  }
}
