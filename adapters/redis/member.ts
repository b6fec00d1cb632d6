import { Effect, type Scope } from "effect"
import { fairPick, type FairLane, type FairTurn, laneRoom } from "../../src/domain/fairPick.js"
import { clampWeight } from "../../src/domain/fairShare.js"
import { QueueError } from "../../src/domain/errors.js"
import type { JobId } from "../../src/domain/ids.js"
import type { QueueConsumer, QueueDelivery } from "../../src/ports/JobQueue.js"
import { call, type Client, COMMAND_TIMEOUT_MS, connected } from "./connection.js"
import { ACK_CHUNK, runAck, runHandBack, runExtend, runLeave, runTake } from "./scripts.js"

/** One queue's keys in Redis (its table prefix's), and the connection its commands share. */
export interface Lanes {
  readonly client: Client
  /** A lane's key is `base` followed by its account. */
  readonly base: string
  /** The stream of versions before the lanes, read as one more lane: account "". */
  readonly legacy: string
  /** The hash of the lanes' weights, by account. */
  readonly registry: string
  /** The stream of one entry that every publish rings. */
  readonly bell: string
  readonly group: string
}

const keyOf = (lanes: Lanes, account: string) => (account === "" ? lanes.legacy : lanes.base + account)

/**
 * How long heads wait for the member's next receive before they are handed back (made
 * reclaimable at once), a third of the visibility at most: a member whose runners all became
 * busy does not keep the heads it took beyond what it gave out from the other members.
 */
const HOLD_MS = 1_000

/** A delivery's receipt: its stream entry id, then its lane's account ("" for the stream of older versions). */
const receiptOf = (entryId: string, account: string) => `${entryId}:${account}`
const laneOfReceipt = (receipt: string) => {
  const at = receipt.indexOf(":")
  return { entryId: receipt.slice(0, at), account: receipt.slice(at + 1) }
}

/** Stream entry ids in stream order ("<ms>-<seq>"). */
const compareEntryIds = (a: string, b: string) => {
  const [am, as] = a.split("-").map(Number) as [number, number]
  const [bm, bs] = b.split("-").map(Number) as [number, number]
  return am - bm || as - bs
}

/** The deliveries of `receipts`, grouped by lane, each group's entry ids. */
const byLane = (receipts: ReadonlyArray<string>) => {
  const lanes = new Map<string, Array<string>>()
  for (const receipt of receipts) {
    const { account, entryId } = laneOfReceipt(receipt)
    const ids = lanes.get(account)
    if (ids === undefined) lanes.set(account, [entryId])
    else ids.push(entryId)
  }
  return lanes
}

/**
 * Acknowledges and deletes the entries (by receipt): one script for every lane (and per
 * thousand entries, ACK_CHUNK), all in one round trip.
 */
export const ackReceipts = (lanes: Lanes, receipts: ReadonlyArray<string>) =>
  receipts.length === 0 ? Effect.void : call("ack", () => {
    const chunks: Array<Array<string>> = []
    let args: Array<string> = []
    let size = 0
    for (const [account, ids] of byLane(receipts)) {
      for (let from = 0; from < ids.length; from += ACK_CHUNK) {
        const part = ids.slice(from, from + ACK_CHUNK)
        if (size + part.length > ACK_CHUNK) {
          chunks.push(args)
          args = []
          size = 0
        }
        args.push(account, String(part.length), ...part)
        size += part.length
      }
    }
    chunks.push(args)
    return Promise.all(chunks.map((some) => runAck(lanes.client, [lanes.registry, lanes.legacy], [lanes.base, lanes.group, ...some])))
  }).pipe(Effect.asVoid)

/** A head: an entry this member took from its lane and has not given out yet. */
interface Head {
  readonly delivery: QueueDelivery
  readonly entryId: string
  /** When it was taken or last kept (its idle time reset). */
  heldAt: number
}

/** What a take script answers: heads kept, the registry, the lanes' entries, the bell's last id. */
type TakeReply = [Array<string>, Array<string>, Array<string>, string]

/**
 * A member of the queue's group, named `name` (docs: makeRedisJobQueue). Its receive takes each
 * lane's share into its heads and gives out up to `max` of them in fair shares; heads the next
 * receive does not come for within HOLD_MS are handed back.
 */
export const makeMember = (
  lanes: Lanes,
  { name, visibilityMs }: { readonly name: string; readonly visibilityMs: number }
): Effect.Effect<QueueConsumer, QueueError, Scope.Scope> =>
  Effect.gen(function*() {
    const { client, group } = lanes
    // The shared connection is down, so most likely is Redis: fail now, not at the connect deadline.
    if (!client.isReady) {
      return yield* new QueueError({ message: `Redis queue: consume (${name}) failed: not connected to Redis` })
    }
    const context = yield* Effect.context<never>()
    const visibility = Math.max(0, Math.ceil(visibilityMs))
    // Heads held longer than this are kept (their idle time reset) before they are given out, or
    // handed back by an extend: never older than the visibility, so never another member's too.
    const keepAfterMs = Math.floor(visibility / 3)
    const holdMs = Math.min(HOLD_MS, keepAfterMs)
    const heads = new Map<string, Array<Head>>()
    // The lanes' weights as the last take read them, and where each lane's XAUTOCLAIM goes on.
    let weights = new Map<string, number>()
    const cursors = new Map<string, string>()
    let turn: FairTurn | undefined
    let receiving = false
    let holdTimer: ReturnType<typeof setTimeout> | undefined

    const handBack = (stale: ReadonlyArray<Head>) =>
      stale.length === 0 ? Effect.void : call("hand back", () =>
        Promise.all([...byLane(stale.map((head) => head.delivery.receipt))].map(([account, ids]) =>
          runHandBack(client, [keyOf(lanes, account)], [group, name, String(visibility), ...ids])
        ))).pipe(Effect.asVoid)

    /** Hands back every head, unless a receive is on its way (it arms this again as it ends). */
    const releaseHeads = () => {
      holdTimer = undefined
      if (receiving || heads.size === 0) return
      const held = [...heads.values()].flat()
      heads.clear()
      Effect.runForkWith(context)(handBack(held).pipe(Effect.catch((error) => Effect.logDebug(error.message))))
    }
    /** Heads wait HOLD_MS for a receive from now. */
    const holdHeads = () => {
      if (holdTimer !== undefined) clearTimeout(holdTimer)
      holdTimer = undefined
      if (heads.size === 0) return
      holdTimer = setTimeout(releaseHeads, holdMs)
      holdTimer.unref()
    }

    // Added before the reader: runs after the reader closed (finalizers run in reverse).
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        if (holdTimer !== undefined) clearTimeout(holdTimer)
        holdTimer = undefined
        const held = [...heads.values()].flat()
        const accounts = new Set(["", ...weights.keys(), ...heads.keys()])
        heads.clear()
        return handBack(held).pipe(
          Effect.andThen(call(`leave the group (${name})`, () => runLeave(client, [lanes.legacy], [lanes.base, group, name, ...accounts]))),
          Effect.catch((error) => Effect.logDebug(error.message))
        )
      })
    )
    const reader = yield* connected(() => client.duplicate(), `consumer "${name}"`)

    const totalWeight = () => {
      let total = 0
      for (const weight of weights.values()) total += weight
      return total
    }

    /**
     * The take script's arguments for a receive of `max`: the heads due for keeping, and each
     * lane's room (its share of `max` less what it holds) with its reclaim cursor.
     */
    const takeArgs = (max: number, now: number) => {
      const stale: Array<string> = []
      for (const [account, held] of heads) {
        for (const head of held) if (now - head.heldAt >= keepAfterMs) stale.push(account, head.entryId)
      }
      const total = totalWeight()
      const rooms = [...weights].flatMap(([account, weight]) => [
        account,
        String(Math.max(0, laneRoom(weight, total, max) - (heads.get(account)?.length ?? 0))),
        cursors.get(account) ?? "0-0"
      ])
      return {
        stale: stale.length / 2,
        args: [
          lanes.base,
          group,
          name,
          String(visibility),
          String(laneRoom(1, total + 1, max)),
          String(stale.length / 2),
          ...stale,
          ...rooms
        ]
      }
    }
    const take = (args: Array<string>) => runTake(client, [lanes.registry, lanes.bell, lanes.legacy], args) as Promise<TakeReply>

    /**
     * Takes a take script's answer into the heads (sent at `now`, keeping `stale` heads). Answers
     * the bell's last id and the entries without a job id.
     */
    const applyTake = ([kept, registry, taken, bellId]: TakeReply, now: number, stale: number) => {
      const strays: Array<string> = []
      // Heads another member took meanwhile are theirs now.
      if (stale > 0) {
        const still = new Set<string>()
        for (let i = 0; i < kept.length; i += 2) still.add(receiptOf(kept[i + 1]!, kept[i]!))
        for (const [account, held] of heads) {
          const left = held.filter((head) => now - head.heldAt < keepAfterMs || still.has(head.delivery.receipt))
          for (const head of left) head.heldAt = now
          if (left.length === 0) heads.delete(account)
          else heads.set(account, left)
        }
      }
      const next = new Map<string, number>()
      for (let i = 0; i < registry.length; i += 2) next.set(registry[i]!, clampWeight(Number(registry[i + 1])))
      for (let i = 0; i < taken.length;) {
        const account = taken[i]!
        const count = Number(taken[i + 2])
        cursors.set(account, taken[i + 1]!)
        // The stream of older versions is one more lane, of weight 1, while it exists.
        if (account === "") next.set("", 1)
        const held = heads.get(account) ?? []
        for (let j = 0; j < count; j++) {
          const entryId = taken[i + 3 + 2 * j]!
          const job = taken[i + 4 + 2 * j]!
          const receipt = receiptOf(entryId, account)
          if (job === "") strays.push(receipt)
          else if (!held.some((head) => head.entryId === entryId)) {
            held.push({ delivery: { jobId: job as JobId, receipt }, entryId, heldAt: now })
          }
        }
        if (held.length > 0) heads.set(account, held.sort((a, b) => compareEntryIds(a.entryId, b.entryId)))
        i += 3 + 2 * count
      }
      weights = next
      for (const account of cursors.keys()) if (!next.has(account)) cursors.delete(account)
      return { bellId, strays }
    }

    /** Takes each lane's room for a receive of `max` into the heads; answers the bell's last id. */
    const refill = (max: number) =>
      Effect.gen(function*() {
        const now = Date.now()
        const { args, stale } = takeArgs(max, now)
        const { bellId, strays } = applyTake(yield* call("receive", () => take(args)), now, stale)
        // Entries without a job id are not this queue's: acked away, or they come back later.
        if (strays.length > 0) yield* ackReceipts(lanes, strays).pipe(Effect.catch((error) => Effect.logDebug(error.message)))
        return bellId
      })

    /** Up to `max` heads, in fair shares, taken out of the heads. */
    const pick = (max: number): Array<QueueDelivery> => {
      const ready: Array<FairLane<Head>> = [...heads].map(([id, held]) => ({ id, weight: weights.get(id) ?? 1, heads: held }))
      const picked = fairPick(turn, ready, max)
      turn = picked.turn
      const given = new Set(picked.picked)
      for (const [account, held] of heads) {
        const left = held.filter((head) => !given.has(head))
        if (left.length === 0) heads.delete(account)
        else heads.set(account, left)
      }
      return picked.picked.map((head) => head.delivery)
    }

    // A blocked read does not see entries becoming reclaimable: it wakes this often to look.
    const reclaimEveryMs = Math.max(100, Math.floor(visibility / 2))

    const receiveNow = (count: number, waitMs: number) =>
      Effect.gen(function*() {
        const until = Date.now() + Math.max(0, waitMs)
        while (true) {
          const bellId = yield* refill(count)
          const got = pick(count)
          const left = Math.ceil(until - Date.now())
          if (got.length > 0 || left <= 0) return got
          // Woken by the next publish's bell (any since this take's included), or to reclaim.
          const block = Math.min(left, reclaimEveryMs)
          yield* call(
            "receive (wait)",
            () => reader.xRead({ key: lanes.bell, id: bellId }, { BLOCK: block, COUNT: 1 }),
            block + COMMAND_TIMEOUT_MS
          )
        }
      })

    const receive = (max: number, waitMs: number): Effect.Effect<ReadonlyArray<QueueDelivery>, QueueError> => {
      const count = Math.floor(max)
      if (count <= 0) return Effect.succeed([])
      return Effect.suspend(() => {
        receiving = true
        return Effect.ensuring(
          receiveNow(count, waitMs),
          Effect.sync(() => {
            receiving = false
            holdHeads()
          })
        )
      })
    }

    const extend = (deliveries: ReadonlyArray<QueueDelivery>) =>
      Effect.suspend(() => {
        // A busy member's heads wait for no receive: handed back, another member may run them.
        const now = Date.now()
        const stale: Array<Head> = []
        for (const [account, held] of heads) {
          const left = held.filter((head) => now - head.heldAt < keepAfterMs)
          stale.push(...held.filter((head) => now - head.heldAt >= keepAfterMs))
          if (left.length === 0) heads.delete(account)
          else heads.set(account, left)
        }
        const extended = deliveries.length === 0 ? Effect.void : call("extend", () =>
          Promise.all([...byLane(deliveries.map((d) => d.receipt))].map(([account, ids]) =>
            runExtend(client, [keyOf(lanes, account)], [group, name, ...ids])
          ))).pipe(Effect.asVoid)
        return Effect.andThen(handBack(stale), extended)
      })

    const ack = (deliveries: ReadonlyArray<QueueDelivery>) => ackReceipts(lanes, deliveries.map((d) => d.receipt))

    return { receive, extend, ack } satisfies QueueConsumer
  })
