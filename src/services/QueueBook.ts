import { Clock, Context, Duration, Effect, Latch, Layer } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { Job } from "../domain/job.js"
import { DEFAULT_FAIR_WEIGHT, fairKeyOf } from "../domain/fairShare.js"
import type { LimitPlan, VersionRef } from "../domain/providerLimits.js"
import {
  FAR_TURNS,
  groupOf,
  placeOf,
  type QueueBoard,
  type QueuePlace,
  type QueueSnapshot,
  type RunTime,
  sameWaiting,
  tellsPlace,
  versionKey,
  type WaitingJob
} from "../domain/queuePosition.js"
import { AdminReadRepo } from "../ports/AdminReadRepo.js"
import { Catalog } from "./Catalog.js"
import { EngineConfig } from "./EngineConfig.js"
import { RunTimes } from "./RunTimes.js"
import { STREAMS_PER_TURN } from "./JobFollow.js"
import { makeSingleFlight } from "./singleFlight.js"
import { makeLimitPlans } from "./worker/limitPlans.js"

/** Completed runs read once to seed the run times of a process that has seen none end yet. */
const SEED_RUNS = 1_000
const SEED_WINDOW_MS = 24 * 60 * 60 * 1000

/**
 * A read of the queue is kept at least this many times as long as it took: however long the
 * queue, the store spends at most a tenth of its time on places (100,000 jobs waiting on SQLite
 * in a few hundred milliseconds: read every few seconds rather than every second).
 */
const REFRESH_SHARE = 10

/** A submit's estimate takes the last read of the queue when it is at most this many poll intervals old. */
const SUBMIT_STALENESS = 10

/** Groups (an account's jobs of one version) the operator's board places: each costs a pass over all groups. */
export const MAX_BOARD_GROUPS = 200

/** A status stream's place updates: called at most once per refresh, when the place changed. */
export type QueueListener = (place: QueuePlace) => void

interface Watcher {
  readonly job: Job
  readonly listener: QueueListener
  /** The refreshes (round modulo FAR_TURNS) in which a place beyond the first ones is told. */
  readonly turn: number
  last: number
}

/**
 * The queue's places for this process's readers (docs/decisions.md, "Queue position and ETA").
 * One grouped read of the store (`AdminReadRepo.waitingSummary`) at most once per
 * `pollIntervalMs`, only while places are asked for, shared by every reader: a GET of a
 * pending job, a status stream (its own refresh loop, running only while streams of pending
 * jobs are open), the dashboard. A place is then counted from that read, never a scan of jobs.
 */
export const make = Effect.gen(function*() {
  const reads = yield* AdminReadRepo
  const catalog = yield* Catalog
  const runTimes = yield* RunTimes
  const { pollIntervalMs } = yield* EngineConfig
  const plans = makeLimitPlans(catalog)
  const single = makeSingleFlight<"queue", QueueSnapshot, StoreError>()
  let snapshot: QueueSnapshot | undefined
  let seeded = false

  /** Before a process saw its first run end: the runs that ended lately, read once. */
  const seed = Effect.suspend(() => {
    if (seeded || !runTimes.isEmpty()) return Effect.void
    seeded = true
    return Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.map(reads.stats({ from: now - SEED_WINDOW_MS, to: now + 1, limit: SEED_RUNS }), ({ runs }) => {
        // Oldest first, so the sketches keep the latest.
        for (let i = runs.length - 1; i >= 0; i--) runTimes.record(runs[i]!.model, runs[i]!.runMs)
      }))
  })

  /** The plan of the last read: a submit's estimate is counted without an effect. */
  let lastPlan: LimitPlan | undefined

  /** How long the last grouped read took: a read is kept at least REFRESH_SHARE times as long. */
  let lastReadMs = 0

  const refresh = single(
    "queue",
    Effect.gen(function*() {
      yield* seed
      lastPlan = yield* plans.current
      const started = yield* Clock.currentTimeMillis
      const summary = yield* reads.waitingSummary
      const at = yield* Clock.currentTimeMillis
      lastReadMs = at - started
      const read: QueueSnapshot = { at, ...summary }
      snapshot = read
      return read
    })
  )

  /**
   * The last read if younger than a poll interval (or REFRESH_SHARE times its own duration, for
   * a queue so long its read is slow), else a new one, shared by whoever asks meanwhile.
   */
  const current = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    snapshot !== undefined && now - snapshot.at < Math.max(pollIntervalMs, REFRESH_SHARE * lastReadMs)
      ? Effect.succeed(snapshot)
      : refresh)

  /** The model's observed run time, else the catalog's estimate for the version. */
  const runTimeOf = (job: VersionRef): Effect.Effect<RunTime, StoreError> => {
    const seen = runTimes.of(job.model)
    if (seen !== undefined) return Effect.succeed(seen)
    return Effect.map(catalog.forJob(job.model, job.version), (resolved) => {
      const ms = Math.round((resolved?.version.estimatedSeconds ?? 30) * 1000)
      return { p50Ms: ms, p90Ms: ms }
    })
  }

  const placeIn = (read: QueueSnapshot, job: WaitingJob, now: number) =>
    Effect.zipWith(plans.current, runTimeOf(job), (plan, runTime) => placeOf({ now, snapshot: read, plan, runTime, job }))

  /** A pending job's place (undefined for any other status), from a read at most a poll interval old. */
  const place = (job: Job): Effect.Effect<QueuePlace | undefined, StoreError> =>
    job.status !== "pending"
      ? Effect.succeed(undefined)
      : Effect.flatMap(current, (read) => Effect.flatMap(Clock.currentTimeMillis, (now) => placeIn(read, job, now)))

  /**
   * When a job about to be submitted should end: the queue's p50 completion when jobs wait ahead
   * of it by the last read, else `job.estimatedCompletionAt` (the version's estimatedSeconds).
   * Its key is the one the store will give it (fairKeyOf: after its account's last waiting job,
   * never before the first job waiting). Reads nothing (a submit must not keep the grouped read
   * going, nor wait for it): a read older than SUBMIT_STALENESS intervals is not used.
   */
  const estimateAtSubmit = (job: Job, now: number): number => {
    const read = snapshot
    const plan = lastPlan
    if (read === undefined || plan === undefined || now - read.at > SUBMIT_STALENESS * pollIntervalMs) return job.estimatedCompletionAt
    let floor: number | undefined
    let lastOwn: number | null = null
    let weight = DEFAULT_FAIR_WEIGHT
    for (const group of read.waiting) {
      floor = floor === undefined ? group.headKey : Math.min(floor, group.headKey)
      if (group.accountId === job.accountId && (lastOwn === null || group.tailKey > lastOwn)) {
        lastOwn = group.tailKey
        weight = group.weight
      }
    }
    const fairKey = fairKeyOf({ floor: floor ?? 0, lastOwn, weight })
    const catalogMs = job.estimatedCompletionAt - job.createdAt
    const runTime = runTimes.of(job.model) ?? { p50Ms: catalogMs, p90Ms: catalogMs }
    const place = placeOf({ now, snapshot: read, plan, runTime, job: { ...job, fairKey } })
    return place.ahead > 0 ? place.estimatedCompletionAt.p50 : job.estimatedCompletionAt
  }

  // Status streams of pending jobs: one loop refreshes and tells them, only while any is open.
  const watchers = new Set<Watcher>()
  /** Watchers added since the last round: told from the new read even when the queue did not move. */
  const added = new Set<Watcher>()
  /** The read and plan of the last round: a queue whose waiting jobs did not move changes no position. */
  let lastRound: { readonly read: QueueSnapshot; readonly plan: LimitPlan } | undefined
  const watching = yield* Latch.make(false)
  /** Rounds counted, and the last one whose read moved: a far place is owed until its turn has come once since. */
  let rounds = 0
  let lastMove = 0
  /** The turn the next watcher takes: watchers spread evenly over the FAR_TURNS rounds. */
  let nextTurn = 0
  const tellAll = Effect.gen(function*() {
    const read = yield* current
    const plan = yield* plans.current
    const round = rounds++
    const turn = round % FAR_TURNS
    const moved = lastRound === undefined || lastRound.plan !== plan || !sameWaiting(lastRound.read, read)
    if (moved) lastMove = round
    // A moved read checks every stream (those near the head are told now, the others in their
    // turn). Unchanged since (an idle queue, or one whose jobs wait on), a round checks the
    // streams added since, and, until every turn came once after the last move, the streams
    // whose turn it is; then the added ones only. Not every open stream once a refresh (10,000
    // streams: a third of an idle API server's CPU, docs/benchmarks.md).
    const told = moved
      ? [...watchers]
      : round - lastMove < FAR_TURNS
      ? [...watchers].filter((watcher) => watcher.turn === turn || added.has(watcher))
      : [...added]
    const now = yield* Clock.currentTimeMillis
    // Each model's run time looked up once a round, not once a stream.
    const runTimeByVersion = new Map<string, RunTime>()
    let checked = 0
    for (const watcher of told) {
      // The event loop gets its turn between slices: a queue moving under 10,000 streams tells
      // thousands of them, and those writes in one go held the loop for hundreds of milliseconds.
      if (++checked % STREAMS_PER_TURN === 0) yield* Effect.yieldNow
      // Checked from this read (a round that fails leaves the rest to be checked in the next).
      const first = added.delete(watcher)
      // Closed meanwhile (its stream ended during a turn given away): told nothing more.
      if (!watchers.has(watcher)) continue
      // A job the read no longer holds as waiting has started or ended: its stream's status event says so.
      if (groupOf(read, watcher.job) === undefined) continue
      const version = versionKey(watcher.job)
      let runTime = runTimeByVersion.get(version)
      if (runTime === undefined) {
        runTime = yield* runTimeOf(watcher.job)
        runTimeByVersion.set(version, runTime)
      }
      const found = placeOf({ now, snapshot: read, plan, runTime, job: watcher.job })
      if (!tellsPlace(found.position, watcher.last, first || watcher.turn === turn)) continue
      watcher.last = found.position
      watcher.listener(found)
    }
    lastRound = { read, plan }
  })
  yield* watching.await.pipe(
    Effect.andThen(tellAll),
    // A failed read skips a round; the streams go on with the last place they were told.
    Effect.catch((error) => Effect.logWarning("queue places not refreshed", error)),
    Effect.andThen(Effect.sleep(Duration.millis(pollIntervalMs))),
    Effect.forever,
    Effect.forkScoped
  )

  /**
   * Tells `listener` the pending job's place when it changes (checked once per refresh; beyond
   * the first EVERY_CHANGE_WITHIN places, in the watcher's turn), starting from `told` (the place
   * the caller already sent). Answers the function that stops it.
   */
  const watch = (job: Job, listener: QueueListener, told: QueuePlace | undefined): (() => void) => {
    const watcher: Watcher = { job, listener, turn: nextTurn, last: told?.position ?? 0 }
    nextTurn = (nextTurn + 1) % FAR_TURNS
    watchers.add(watcher)
    added.add(watcher)
    watching.openUnsafe()
    return () => {
      watchers.delete(watcher)
      added.delete(watcher)
      if (watchers.size === 0) watching.closeUnsafe()
    }
  }

  /**
   * The operator's view: per account and version waiting, its first and last job's places
   * (the MAX_BOARD_GROUPS groups whose first jobs come first), from the same read as the rest.
   */
  const board: Effect.Effect<QueueBoard, StoreError> = Effect.gen(function*() {
    const read = yield* current
    const now = yield* Clock.currentTimeMillis
    const first = [...read.waiting].sort((a, b) => a.headKey - b.headKey).slice(0, MAX_BOARD_GROUPS)
    const groups = yield* Effect.forEach(first, (group) =>
      Effect.zipWith(
        placeIn(read, { ...group, fairKey: group.headKey, tieId: group.headId }, now),
        placeIn(read, { ...group, fairKey: group.tailKey, tieId: group.headId }, now),
        (head, tail) => ({ accountId: group.accountId, model: group.model, version: group.version, waiting: group.count, first: head, last: tail })
      ))
    return {
      at: read.at,
      waitingGroups: read.waiting.length,
      groups: groups.sort((a, b) => a.first.position - b.first.position)
    }
  })

  return { place, estimateAtSubmit, watch, board } as const
})

export class QueueBook extends Context.Service<QueueBook, Effect.Success<typeof make>>()("genjobs/QueueBook") {
  static readonly layer = Layer.effect(QueueBook, make)
}
