import { Clock, Effect, Option } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { ChangeTopic, StoreChanges } from "../ports/StoreChanges.js"
import { makeSingleFlight } from "./singleFlight.js"

/** Rows cached per process and per cache: beyond it the oldest entry goes, so guessed or rotated keys cannot grow memory. */
export const MAX_CACHED_ROWS = 10_000

interface Entry<A> {
  readonly found: A
  readonly at: number
  readonly generation: number
}

/**
 * A read of the store by key, cached in this process: an API key by its hash (never its secret)
 * for authentication, an account by its id for signing webhooks. An entry is used while no
 * change to `topic` was heard since it was read and for at most the store's `maxAgeMs`; anything
 * else reads the store. Only rows found are cached: a wrong key always costs a read (and counts
 * against its client's throttle, AuthThrottle.ts). What the caller checks on the row (a key's
 * activity, expiry and addresses; a secret's expiry) it checks on every use, on the cached row.
 */
export const makeStoreCache = <A, E extends StoreError>(
  changes: StoreChanges["Service"],
  topic: ChangeTopic,
  read: (key: string) => Effect.Effect<Option.Option<A>, E>
) => {
  const entries = new Map<string, Entry<A>>()
  // Misses of one key at once (a burst of requests with it) share one read of the same generation.
  const once = makeSingleFlight<string, Option.Option<A>, E>()

  const remember = (key: string, found: A, at: number, generation: number) => {
    entries.delete(key)
    if (entries.size >= MAX_CACHED_ROWS) entries.delete(entries.keys().next().value!)
    entries.set(key, { found, at, generation })
  }

  return (key: string): Effect.Effect<Option.Option<A>, E> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const generation = changes.generation(topic)
      const entry = entries.get(key)
      if (entry !== undefined && entry.generation === generation && now - entry.at < changes.maxAgeMs) {
        return Effect.succeed(Option.some(entry.found))
      }
      // The generation is taken before the read: a change heard while it runs makes the entry stale at once.
      return Effect.tap(once(`${generation}:${key}`, read(key)), (found) =>
        Effect.sync(() => {
          if (Option.isSome(found)) remember(key, found.value, now, generation)
          else entries.delete(key)
        }))
    })
}
