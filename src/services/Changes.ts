import { Context, Duration, Effect, Latch, Layer, Queue } from "effect"
import {
  type ChangeEntry,
  type ChangePosition,
  comparePositions,
  decodeChangeCursor,
  encodeChangeCursor,
  FEED_START,
  nextAfter
} from "../domain/change.js"
import { ServiceUnavailable, type StoreError, ValidationError } from "../domain/errors.js"
import type { AccountId } from "../domain/ids.js"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../domain/limits.js"
import { ChangeFeed } from "../ports/ChangeFeed.js"
import { JobEvents } from "../ports/JobEvents.js"
import { type Caller, requireScope } from "./Auth.js"
import { EngineConfig } from "./EngineConfig.js"
import { WATCHERS_RETRY_AFTER_SECONDS } from "./JobFollow.js"

/**
 * How often the stream reader reads the feed while any stream is open, hint or none: endings
 * of processes whose hints do not reach this one, and entries a running transaction held back
 * (PostgreSQL serves an entry once every older transaction has ended), arrive within it.
 */
export const CHANGES_POLL = Duration.seconds(1)

/** The shortest time between two reads: a burst of hints (each claim is one) costs one read per gap. */
const MIN_READ_GAP = Duration.millis(100)

/** Entries read in one statement, by the stream reader and a stream's catch-up. */
const READ_BATCH = 500

/** A page of the feed, as GET /v1/changes answers it. */
export interface ChangePage {
  readonly entries: ReadonlyArray<ChangeEntry>
  /** Where the next page starts: always set, so a client at the end asks again later from there. */
  readonly nextCursor: string
  /** More entries can be read at once. */
  readonly hasMore: boolean
}

/** One follower of an account's feed (a stream), called back from the process's one reader. Must return at once. */
export interface ChangeListener {
  /** Entries after the follower's cursor, in feed order, each once. */
  readonly onEntries: (entries: ReadonlyArray<ChangeEntry>) => void
  /** The follow is over: a store error (the client resumes with Last-Event-ID). Not called when the follower left first. */
  readonly onEnd: (error: StoreError) => void
}

interface Follower {
  readonly accountId: AccountId
  /** The last entry given, or where the follow started. */
  cursor: ChangePosition
  readonly listener: ChangeListener
}

/** Checks a page request's `limit` and `after`; bad values are refused, not corrected. */
export const readChangesRequest = (
  request: { readonly limit?: number | undefined; readonly after?: string | undefined }
): Effect.Effect<{ readonly limit: number; readonly after: ChangePosition | undefined }, ValidationError> => {
  const limit = request.limit ?? DEFAULT_PAGE_SIZE
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    return Effect.fail(new ValidationError({ message: `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`, details: { field: "limit" } }))
  }
  return Effect.map(readAfter(request.after, "after"), (after) => ({ limit, after }))
}

/** A cursor the API issued (a page's nextCursor, an entry's cursor, an event id), or none. */
export const readAfter = (text: string | undefined, field: string): Effect.Effect<ChangePosition | undefined, ValidationError> => {
  if (text === undefined) return Effect.succeed(undefined)
  const after = decodeChangeCursor(text.trim())
  return after === undefined
    ? Effect.fail(new ValidationError({ message: `${field} is not a cursor this API issued`, details: { field } }))
    : Effect.succeed(after)
}

export const make = Effect.gen(function*() {
  const feed = yield* ChangeFeed
  const events = yield* JobEvents
  const { maxWatchers } = yield* EngineConfig

  /** The caller's account's entries after `after` (from the start without one): scope check_status, as the job reads. */
  const page = Effect.fn("Changes.page")(function*(
    caller: Caller,
    request: { readonly limit?: number | undefined; readonly after?: string | undefined }
  ) {
    yield* requireScope(caller, "check_status")
    const { after = FEED_START, limit } = yield* readChangesRequest(request)
    // One more than the page: the extra entry says more follow.
    const read = yield* feed.read({ accountId: caller.account.id, after, upTo: undefined, limit: limit + 1 })
    const entries = read.entries.slice(0, limit)
    const hasMore = read.entries.length > limit
    const next = hasMore ? entries[entries.length - 1]!.position : nextAfter(after, read, limit + 1)
    return { entries, hasMore, nextCursor: encodeChangeCursor(next) } satisfies ChangePage
  })

  /*
   * The streams of this process share one reader. It keeps `head`, a position up to which every
   * entry has been given to the followers it concerns, and reads the whole feed after it (every
   * account's, one statement per READ_BATCH entries): a stream costs an entry in a map, no
   * fiber, timer or statement of its own. A follower joining with a cursor behind `head` is
   * first caught up on its account's entries up to `head`, by the same reader, so no entry is
   * missed between the two reads and none is given twice.
   */
  const accounts = new Map<AccountId, Set<Follower>>()
  const joining = new Set<Follower>()
  let head: ChangePosition | undefined
  let open = 0
  const wake = yield* Queue.sliding<void>(1)
  // Open while any stream is: an idle engine reads nothing.
  const following = yield* Latch.make(false)
  // Held while any stream is open: other processes send their claims' and endings' hints only then.
  let unfollow: (() => void) | undefined

  // Any job's change may be an ending: wake the reader (coalesced; MIN_READ_GAP bounds the reads).
  yield* events.subscribeAll(() => {
    if (open > 0) Queue.offerUnsafe(wake, undefined)
  })

  const give = (follower: Follower, entries: ReadonlyArray<ChangeEntry>) => {
    const cursor = follower.cursor
    const fresh = entries.filter((e) => comparePositions(e.position, cursor) > 0)
    if (fresh.length === 0) return
    follower.cursor = fresh[fresh.length - 1]!.position
    follower.listener.onEntries(fresh)
  }

  const endAll = (error: StoreError) =>
    Effect.sync(() => {
      const ended = [...joining, ...[...accounts.values()].flatMap((set) => [...set])]
      joining.clear()
      accounts.clear()
      head = undefined
      for (const follower of ended) follower.listener.onEnd(error)
    })

  /** A joining follower's own account's entries after its cursor, up to `upTo` (head), then its place among the live. */
  const catchUp = (follower: Follower, upTo: ChangePosition): Effect.Effect<void, StoreError> =>
    Effect.gen(function*() {
      while (joining.has(follower) && comparePositions(follower.cursor, upTo) < 0) {
        const read = yield* feed.read({ accountId: follower.accountId, after: follower.cursor, upTo, limit: READ_BATCH })
        if (!joining.has(follower)) return
        give(follower, read.entries)
        if (read.entries.length < READ_BATCH) break
      }
      if (!joining.delete(follower)) return
      let set = accounts.get(follower.accountId)
      if (set === undefined) accounts.set(follower.accountId, set = new Set())
      set.add(follower)
    })

  /** Every account's entries after `head`, each given to its account's followers. */
  const readOn: Effect.Effect<void, StoreError> = Effect.gen(function*() {
    for (;;) {
      const after: ChangePosition = head ?? (yield* feed.read({ accountId: undefined, after: FEED_START, upTo: undefined, limit: 0 })).settled
      head = after
      for (const follower of [...joining]) yield* catchUp(follower, after)
      const read = yield* feed.read({ accountId: undefined, after, upTo: undefined, limit: READ_BATCH })
      const byAccount = new Map<AccountId, Array<ChangeEntry>>()
      for (const entry of read.entries) {
        if (!accounts.has(entry.accountId)) continue
        let list = byAccount.get(entry.accountId)
        if (list === undefined) byAccount.set(entry.accountId, list = [])
        list.push(entry)
      }
      for (const [accountId, entries] of byAccount) {
        for (const follower of accounts.get(accountId) ?? []) give(follower, entries)
      }
      head = nextAfter(after, read, READ_BATCH)
      if (read.entries.length < READ_BATCH && joining.size === 0) return
    }
  })

  // The reader: reads after each wake (a hint or a join) and every CHANGES_POLL while streams are open.
  yield* following.await.pipe(
    Effect.andThen(Queue.take(wake).pipe(Effect.timeoutOption(CHANGES_POLL))),
    Effect.andThen(readOn.pipe(
      Effect.catch((error) =>
        Effect.andThen(endAll(error), Effect.logWarning("change streams ended by a store error; their clients resume", error))
      )
    )),
    Effect.andThen(Effect.sleep(MIN_READ_GAP)),
    Effect.forever,
    Effect.forkScoped
  )

  /**
   * Adds a follower of the caller's account from `after` (an entry's cursor; undefined: from now
   * on): scope check_status. Returns the function that removes it; refused when this process
   * already holds `maxWatchers` change streams.
   */
  const follow = (caller: Caller, after: ChangePosition | undefined, listener: ChangeListener) =>
    Effect.gen(function*() {
      yield* requireScope(caller, "check_status")
      if (open >= maxWatchers) {
        return yield* Effect.fail(
          new ServiceUnavailable({
            message: "Too many change streams are open on this server; retry after Retry-After",
            details: { reason: "too_many_watchers", maxWatchers },
            retryAfterSeconds: WATCHERS_RETRY_AFTER_SECONDS
          })
        )
      }
      // Without a cursor, from the feed's settled end as of now (one statement): an ending committed
      // after the stream opened is never taken for one before it.
      const from = after ?? (yield* feed.read({ accountId: caller.account.id, after: FEED_START, upTo: undefined, limit: 0 })).settled
      const follower: Follower = { accountId: caller.account.id, cursor: from, listener }
      joining.add(follower)
      open++
      following.openUnsafe()
      unfollow ??= events.follow()
      Queue.offerUnsafe(wake, undefined)
      let removed = false
      return () => {
        if (removed) return
        removed = true
        open--
        joining.delete(follower)
        const set = accounts.get(follower.accountId)
        set?.delete(follower)
        if (set?.size === 0) accounts.delete(follower.accountId)
        if (open === 0) {
          following.closeUnsafe()
          unfollow?.()
          unfollow = undefined
          // Nothing follows the feed: the next stream starts from a fresh head.
          head = undefined
        }
      }
    })

  return { page, follow } as const
})

export class Changes extends Context.Service<Changes, Effect.Success<typeof make>>()("genjobs/Changes") {
  static readonly layer = Layer.effect(Changes, make)
}
