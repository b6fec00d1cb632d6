import { Clock, Context, Effect, Layer, Ref } from "effect"
import { authRetryAfterSeconds, failureBucket, throttleKeyOf } from "../domain/authThrottle.js"
import { InvalidApiKey } from "../domain/accessRefusals.js"
import type { StoreError } from "../domain/errors.js"
import { RateLimitExceeded } from "../domain/rateLimit.js"
import { AuthFailures } from "../ports/AuthFailures.js"
import { makeSingleFlight } from "./singleFlight.js"

/** A credential that was presented and is wrong: a guess. A missing one is not, nor a right key that is deactivated or expired. */
const isGuess = (error: unknown): boolean => error instanceof InvalidApiKey

/**
 * A client found under the limit is not read again for this long: its own next guess here drops
 * that at once, so only guesses it made at other processes meanwhile are seen this much later.
 */
export const CLEAN_CLIENT_TRUST_MS = 1_000

/** Clients remembered as under the limit; beyond it the oldest is forgotten (and read again). */
const MAX_CLEAN_CLIENTS = 10_000

export const make = Effect.gen(function*() {
  const failures = yield* AuthFailures
  // The bucket this process last pruned before: buckets end once a minute, so pruning does too.
  const prunedBefore = yield* Ref.make(0)

  /** When each client was last found under the limit. */
  const clean = new Map<string, number>()
  // Requests from one client at once whose trust ran out share one read of its failures.
  const once = makeSingleFlight<string, number, StoreError>()
  const markClean = (client: string, now: number) => {
    clean.delete(client)
    if (clean.size >= MAX_CLEAN_CLIENTS) clean.delete(clean.keys().next().value!)
    clean.set(client, now)
  }

  /**
   * Each address's throttle key, kept: parsing an address (ipaddr.js) cost more than the rest of
   * the guard, on every authenticated request. Bounded as the clean clients are.
   */
  const keys = new Map<string, string>()
  const keyOf = (address: string | undefined): string => {
    if (address === undefined) return throttleKeyOf(undefined)
    let key = keys.get(address)
    if (key === undefined) {
      key = throttleKeyOf(address)
      if (keys.size >= MAX_CLEAN_CLIENTS) keys.delete(keys.keys().next().value!)
      keys.set(address, key)
    }
    return key
  }

  const recordGuess = (client: string, bucket: number) =>
    Effect.gen(function*() {
      clean.delete(client)
      yield* failures.record(client, bucket)
      const stale = bucket - 1
      if ((yield* Ref.getAndSet(prunedBefore, stale)) < stale) yield* failures.prune(stale)
    })

  /**
   * Runs `authentication` unless the client address (`clientAddress` of the request) made too
   * many failed authentications lately, in which case it answers 429 RATE_LIMIT_EXCEEDED with
   * Retry-After before any key or token is looked at. A wrong credential counts against it.
   * Untraced: it runs on every authenticated request, inside the request's own span.
   */
  const guard = Effect.fnUntraced(function*<A, E, R>(
    clientAddress: string | undefined,
    authentication: Effect.Effect<A, E, R>
  ): Effect.fn.Return<A, E | RateLimitExceeded | StoreError, R> {
    const client = keyOf(clientAddress)
    const now = yield* Clock.currentTimeMillis
    const bucket = failureBucket(now)
    const cleanAt = clean.get(client)
    if (cleanAt === undefined || now - cleanAt >= CLEAN_CLIENT_TRUST_MS) {
      const wait = yield* once(`${bucket}:${client}`, Effect.map(failures.recent(client, bucket), (recent) => authRetryAfterSeconds(recent, now)))
      if (wait > 0) {
        clean.delete(client)
        return yield* Effect.fail(
          new RateLimitExceeded({ message: "Too many failed authentications from this address: retry later", details: {}, retryAfterSeconds: wait })
        )
      }
      markClean(client, now)
    }
    return yield* Effect.tapError(authentication, (error) => (isGuess(error) ? recordGuess(client, bucket) : Effect.void))
  })

  return { guard } as const
})

/** Throttles credential guessing per client address, across every process on the store (docs/operations.md). */
export class AuthThrottle extends Context.Service<AuthThrottle, Effect.Success<typeof make>>()("genjobs/AuthThrottle") {
  static readonly layer = Layer.effect(AuthThrottle, make)
}
