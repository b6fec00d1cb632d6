import { PgClient } from "@effect/sql-pg"
import { randomUUID } from "node:crypto"
import { Clock, Duration, Effect, Latch } from "effect"
import { makeBackgroundWriter } from "../../src/services/writeBatcher.js"

/** How a process that follows jobs tells the others, and how long they believe it. */
export interface HintInterestTimings {
  /** How often a following process repeats its announcement; others believe one for three of these. */
  readonly heartbeat: Duration.Input
  /**
   * After a process starts following, when it re-reads what it follows once: a change committed
   * before the others heard the announcement was not hinted. The documented bound on that gap.
   */
  readonly settle: Duration.Input
  /**
   * How long a process whose LISTEN just (re)connected sends every hint, while followers answer
   * its ask. Short: a follower that answers re-reads `settle` later anyway.
   */
  readonly askGrace: Duration.Input
}

export const DEFAULT_HINT_INTEREST: HintInterestTimings = {
  heartbeat: Duration.seconds(5),
  settle: Duration.seconds(1),
  askGrace: Duration.millis(250)
}

/**
 * Control-channel payloads: "this process follows jobs", and "who follows?" from a process that
 * just connected, with a token of its own so it does not answer itself.
 */
const FOLLOW = "follow"
const ASK = "ask "

/**
 * Whether any process sharing the database follows jobs, so that claims' and endings' hints
 * (one `pg_notify` each batch, heard by every process) are sent only then: in a drain nobody
 * follows, and the hints were a third of a worker's CPU per job (docs/decisions.md, "Job-event
 * hints only while someone follows").
 *
 * A process with followers NOTIFYs `FOLLOW` on `channel` at once and every `heartbeat` while
 * they last; every process believes it for three heartbeats. A process whose LISTEN
 * (re)connects cannot have heard the announcements made meanwhile: it NOTIFYs `ASK`, every
 * following process answers with `FOLLOW`, and it sends every hint until `askGrace` has passed
 * (and all the time its LISTEN is down). No table: interest lives as long as the heartbeats.
 * A worker that starts into a backlog thus sends hints for its first `askGrace` at most.
 *
 * The gap: changes committed after `follow` but before another process heard the announcement
 * (a notification's delay, milliseconds) were not hinted; the following process hints its own
 * followers once `settle` after its first announcement (`onSettled`), so a change reaches a new
 * follower within `settle` at worst, well inside the followers' own safety re-reads. A process
 * that answers an ask re-reads `settle` later too: the newcomer may have skipped hints before
 * the answer reached it.
 */
export const makeHintInterest = (channel: string, onSettled: Effect.Effect<void>, timings: HintInterestTimings = DEFAULT_HINT_INTEREST) =>
  Effect.gen(function*() {
    const client = yield* PgClient.PgClient
    const scope = yield* Effect.scope
    // The layer's Clock, read synchronously: `interested` is asked on every claim and ending batch.
    const clock = yield* Clock.Clock
    const heartbeat = Duration.fromInputUnsafe(timings.heartbeat)
    const settle = Duration.min(Duration.fromInputUnsafe(timings.settle), heartbeat)
    const believed = 3 * Duration.toMillis(heartbeat)
    const askGrace = Duration.toMillis(Duration.fromInputUnsafe(timings.askGrace))

    let follows = 0
    // Until its LISTEN holds this process cannot hear who follows: it hints everything.
    let listenerDown = true
    let interestUntil = 0
    const ownAsk = `${ASK}${randomUUID()}`

    const notifier = (payload: string) =>
      makeBackgroundWriter<void>(() =>
        client`SELECT pg_notify(${channel}, ${payload})`.pipe(
          Effect.asVoid,
          Effect.catchCause((cause) => Effect.logWarning("could not announce job followers; other processes' hints may wait for the next heartbeat", cause))
        ), Number.MAX_SAFE_INTEGER)
    const announce = yield* notifier(FOLLOW)
    const ask = yield* notifier(ownAsk)

    // One fiber for the process: announces while anything follows, sleeps on the latch otherwise.
    const active = yield* Latch.make(false)
    yield* Effect.forkScoped(Effect.forever(Effect.gen(function*() {
      yield* active.await
      announce()
      yield* Effect.sleep(settle)
      yield* onSettled
      yield* Effect.sleep(Duration.subtract(heartbeat, settle))
      while (follows > 0) {
        announce()
        yield* Effect.sleep(heartbeat)
      }
    })))

    return {
      /** Whether hints of claims and endings are wanted anywhere now. */
      interested: (): boolean => follows > 0 || listenerDown || clock.currentTimeMillisUnsafe() < interestUntil,
      follow: (): (() => void) => {
        if (++follows === 1) active.openUnsafe()
        let released = false
        return () => {
          if (released) return
          released = true
          if (--follows === 0) active.closeUnsafe()
        }
      },
      onNotification: (payload: string): Effect.Effect<void> =>
        Effect.suspend(() => {
          if (payload === FOLLOW) interestUntil = Math.max(interestUntil, clock.currentTimeMillisUnsafe() + believed)
          if (!payload.startsWith(ASK) || payload === ownAsk || follows === 0) return Effect.void
          announce()
          // Asks are rare (a process starting or reconnecting): a fiber each.
          return Effect.asVoid(Effect.forkIn(Effect.andThen(Effect.sleep(settle), onSettled), scope))
        }),
      onConnected: Effect.sync(() => {
        listenerDown = false
        interestUntil = Math.max(interestUntil, clock.currentTimeMillisUnsafe() + askGrace)
        ask()
      }),
      onDropped: Effect.sync(() => {
        listenerDown = true
      })
    } as const
  })
