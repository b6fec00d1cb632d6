import { Effect, Layer } from "effect"
import { type ChangeTopic, makeStoreChanges, StoreChanges } from "../../src/ports/StoreChanges.js"
import { PgListener } from "./pgListener.js"
import { checkTablePrefix, DEFAULT_TABLE_PREFIX } from "./tables.js"

/**
 * A cached key, account or catalog is trusted this long without a change heard: the bound when
 * a notification is lost without the connection dropping (a drop is noticed, see below).
 */
export const PG_CACHE_MAX_AGE_MS = 5_000

/** The channel the store's triggers (migration 0015) notify on: `<prefix>changes`, its payload the topic. */
export const changesChannel = (prefix: string) => `${prefix}changes`

const TOPICS: ReadonlyArray<ChangeTopic> = ["access", "catalog"]

/**
 * Change hints from every process on the database: triggers on keys, accounts and the catalog
 * NOTIFY `<prefix>changes` when they commit, and this process LISTENs on its one LISTEN connection
 * (PgListener, shared with the job and webhook signals).
 * Until the connection is up, and whenever it drops, every topic counts as changed: nothing is
 * cached across a gap in which a change could have been missed.
 */
export const makePgStoreChanges = (tablePrefix: string = DEFAULT_TABLE_PREFIX) =>
  Effect.gen(function*() {
    const prefix = yield* checkTablePrefix(tablePrefix)
    const changes = makeStoreChanges(PG_CACHE_MAX_AGE_MS)
    const channel = changesChannel(prefix)
    const everything = Effect.forEach(TOPICS, changes.changed, { discard: true })

    yield* (yield* PgListener).add({
      channels: [channel],
      onNotification: (_, payload) => {
        const topic = TOPICS.find((t) => t === payload)
        return topic === undefined ? everything : changes.changed(topic)
      },
      // Whatever changed before LISTEN took hold was not heard.
      onConnected: (reconnected) =>
        reconnected ? Effect.andThen(everything, Effect.logInfo("change notifications restored: LISTEN connection re-subscribed")) : everything,
      onDropped: Effect.andThen(
        everything,
        Effect.logWarning("change notifications lost: LISTEN connection dropped; reconnecting, caches re-read meanwhile")
      )
    })
    return changes
  })

/** Change hints over the process's LISTEN connection (PgListener in context). */
export const layerPgStoreChanges = (tablePrefix?: string | undefined) => Layer.effect(StoreChanges, makePgStoreChanges(tablePrefix))
