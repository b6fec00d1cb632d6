import { STORE_RETRY_AFTER_SECONDS } from "./errors.js"

/** A connection pool with every connection in use, as a request about to queue for one finds it. */
export interface BusyPool {
  /** Callers already queued for a connection, served first (the queue is first come, first served). */
  readonly waiting: number
  /** Connections the pool serves its queue with. */
  readonly connections: number
  /** How long a caller holds a connection, as lately observed; undefined before any was. */
  readonly holdMs: number | undefined
}

/**
 * How long a caller joining the queue now can expect to wait: each connection frees once per
 * hold, so the queue ahead of it, and it, are served `connections` at a time. Nothing is known
 * before a first hold was seen, so nothing is expected (the wait's own bound still applies).
 */
export const expectedWaitMs = ({ connections, holdMs, waiting }: BusyPool): number =>
  holdMs === undefined ? 0 : ((waiting + 1) * holdMs) / Math.max(1, connections)

/**
 * How much one new hold moves the observed hold time: about the last 20 holds count, so a burst
 * of slow statements is seen within a pool's worth of them, and one slow statement is not a trend.
 */
const HOLD_WEIGHT = 0.1

/** The observed hold time after one more hold (an exponentially weighted mean). */
export const observedHoldMs = (before: number | undefined, holdMs: number): number =>
  before === undefined ? holdMs : before + HOLD_WEIGHT * (holdMs - before)

/**
 * The Retry-After of a shed request: when the queue it found is expected to have drained, in
 * whole seconds, at least 1 and at most the store's own retry delay (the client comes back
 * once the burst is served, not all at the same second, and never later than after an outage).
 */
export const shedRetryAfterSeconds = (expectedMs: number): number =>
  Math.min(STORE_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(expectedMs / 1000)))
