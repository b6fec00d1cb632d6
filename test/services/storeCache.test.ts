import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import { TestClock } from "effect/testing"
import { makeStoreChanges } from "../../src/ports/StoreChanges.js"
import { makeStoreCache, MAX_CACHED_ROWS } from "../../src/services/storeCache.js"

/** A store of keys that counts its reads; `rows` is what it holds now. */
const countingStore = (rows: Map<string, string>) => {
  const reads = { n: 0 }
  const read = (hash: string) => Effect.sync(() => {
    reads.n++
    return Option.fromNullishOr(rows.get(hash))
  })
  return { reads, read }
}

describe("the store cache", () => {
  it.effect("answers from memory until its max age, then reads the store again, change heard or not", () =>
    Effect.gen(function*() {
      const rows = new Map([["h1", "key one"]])
      const { read, reads } = countingStore(rows)
      const find = makeStoreCache(makeStoreChanges(5_000), "access", read)
      expect(yield* find("h1")).toEqual(Option.some("key one"))
      rows.set("h1", "key one, changed")
      yield* TestClock.adjust(4_999)
      expect(yield* find("h1")).toEqual(Option.some("key one"))
      expect(reads.n).toBe(1)
      yield* TestClock.adjust(1)
      expect(yield* find("h1")).toEqual(Option.some("key one, changed"))
      expect(reads.n).toBe(2)
    }))

  it.effect("drops every entry when a change to access is heard, and none for a catalog change", () =>
    Effect.gen(function*() {
      const rows = new Map([["h1", "key one"]])
      const { read, reads } = countingStore(rows)
      const changes = makeStoreChanges(60_000)
      const find = makeStoreCache(changes, "access", read)
      yield* find("h1")
      yield* changes.changed("catalog")
      yield* find("h1")
      expect(reads.n).toBe(1)
      rows.delete("h1")
      yield* changes.changed("access")
      expect(yield* find("h1")).toEqual(Option.none())
      expect(reads.n).toBe(2)
    }))

  it.effect("never caches a key it did not find, and holds at most MAX_CACHED_ROWS", () =>
    Effect.gen(function*() {
      const rows = new Map<string, string>()
      const { read, reads } = countingStore(rows)
      const find = makeStoreCache(makeStoreChanges(60_000), "access", read)
      yield* find("missing")
      yield* find("missing")
      expect(reads.n).toBe(2)
      for (let i = 0; i <= MAX_CACHED_ROWS; i++) rows.set(`h${i}`, `k${i}`)
      for (let i = 0; i <= MAX_CACHED_ROWS; i++) yield* find(`h${i}`)
      const before = reads.n
      // The first one read went out when the cache was full; the last is still held.
      yield* find(`h${MAX_CACHED_ROWS}`)
      expect(reads.n).toBe(before)
      yield* find("h0")
      expect(reads.n).toBe(before + 1)
    }))
})
