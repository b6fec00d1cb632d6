import { Clock, Effect, Option } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { StoreChanges } from "../ports/StoreChanges.js"
import { makeSingleFlight } from "./singleFlight.js"

/** Keys cached per process: beyond it the oldest entry goes, so guessed or rotated keys cannot grow memory. */
export const MAX_CACHED_KEYS = 10_000

interface Entry<A> {
  readonly found: A
  readonly at: number
  readonly generation: number
}

/**
 * The key lookup of authentication, cached by the key's hash (never its secret). An entry is
 * used while no change to keys or accounts was heard since it was read and for at most the
 * store's `maxAgeMs`; anything else reads the store. Only keys found are cached: a wrong key
 * always costs a read, and counts against its client's throttle (AuthThrottle.ts). The checks
 * of the key (active, expiry, addresses) run on every request, on the cached row.
 */
export const makeKeyCache = <A, E extends StoreError>(
  changes: StoreChanges["Service"],
  read: (hash: string) => Effect.Effect<Option.Option<A>, E>
) => {
  const entries = new Map<string, Entry<A>>()
  // Misses of one key at once (a burst of requests with it) share one read of the same generation.
  const once = makeSingleFlight<string, Option.Option<A>, E>()

  const remember = (hash: string, found: A, at: number, generation: number) => {
    entries.delete(hash)
    if (entries.size >= MAX_CACHED_KEYS) entries.delete(entries.keys().next().value!)
    entries.set(hash, { found, at, generation })
  }

  return (hash: string): Effect.Effect<Option.Option<A>, E> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const generation = changes.generation("access")
      const entry = entries.get(hash)
      if (entry !== undefined && entry.generation === generation && now - entry.at < changes.maxAgeMs) {
        return Effect.succeed(Option.some(entry.found))
      }
      // The generation is taken before the read: a change heard while it runs makes the entry stale at once.
      return Effect.tap(once(`${generation}:${hash}`, read(hash)), (found) =>
        Effect.sync(() => {
          if (Option.isSome(found)) remember(hash, found.value, now, generation)
          else entries.delete(hash)
        }))
    })
}
