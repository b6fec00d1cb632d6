/**
 * Fair shares across lanes (one lane per account on a broker): weighted round robin, first in,
 * first out within a lane. A lane's turn gives it `weight` picks in a row (fewer when it runs out,
 * which ends its turn); the turns go round the lanes in the order of their ids, and a pick that
 * stops mid-turn (its `max` reached) leaves the rest of the turn for the next pick. Pure: each
 * queue consumer keeps its own `FairTurn` between picks.
 */

/** The lane whose turn it is and the picks left in it; none left: the turn passes to the next lane. */
export interface FairTurn {
  readonly lane: string
  readonly credit: number
}

/** A lane's heads: what it holds ready to hand out, oldest first. */
export interface FairLane<A> {
  readonly id: string
  /** Picks per turn: an integer, 1 or more. */
  readonly weight: number
  readonly heads: ReadonlyArray<A>
}

export interface FairPick<A> {
  /** In the order picked; within a lane, in the order of its heads. */
  readonly picked: ReadonlyArray<A>
  /** Where the next pick goes on; the turn given in when nothing was picked. */
  readonly turn: FairTurn | undefined
}

const byId = <A>(a: FairLane<A>, b: FairLane<A>) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
const weightOf = (weight: number) => Math.max(1, Math.floor(weight))

/** Up to `max` heads of `lanes`, in weighted round robin from `turn` (the lane after it when it has no heads). */
export const fairPick = <A>(turn: FairTurn | undefined, lanes: ReadonlyArray<FairLane<A>>, max: number): FairPick<A> => {
  const ready = lanes.filter((lane) => lane.heads.length > 0).sort(byId)
  const picked: Array<A> = []
  const limit = Math.floor(max)
  if (ready.length === 0 || !(limit >= 1)) return { picked, turn }
  // The turn goes on where the last pick left credit in it; else it passes to the first lane after
  // the one last served, in the order of ids (a lane gone since keeps the rotation's place).
  let at = 0
  if (turn !== undefined) {
    const same = ready.findIndex((lane) => lane.id === turn.lane)
    at = same >= 0 && turn.credit > 0 ? same : Math.max(0, ready.findIndex((lane) => lane.id > turn.lane))
  }
  let credit = turn !== undefined && ready[at]!.id === turn.lane && turn.credit > 0 ? turn.credit : weightOf(ready[at]!.weight)
  // The lane last served when its turn just ended: the next pick starts after it, among the lanes ready then.
  let passed: string | undefined
  const taken = ready.map(() => 0)
  let left = ready.reduce((sum, lane) => sum + lane.heads.length, 0)
  while (picked.length < limit && left > 0) {
    const lane = ready[at]!
    const n = Math.min(credit, lane.heads.length - taken[at]!, limit - picked.length)
    for (let i = 0; i < n; i++) picked.push(lane.heads[taken[at]! + i]!)
    taken[at]! += n
    left -= n
    credit -= n
    // The turn ends when its credit is spent, or when the lane ran out of heads before `max` was
    // reached; a pick stopped by `max` keeps the rest of the turn (the lane may hold more than its heads).
    if (credit === 0 || picked.length < limit) {
      passed = lane.id
      at = (at + 1) % ready.length
      credit = weightOf(ready[at]!.weight)
    } else passed = undefined
  }
  return { picked, turn: passed !== undefined ? { lane: passed, credit: 0 } : { lane: ready[at]!.id, credit } }
}

/**
 * How many heads a consumer wants ready in a lane for a pick of `max`: the lane's share of `max`
 * by weight, rounded up (at least one, at most `max`), so one read of every lane fills a pick.
 */
export const laneRoom = (weight: number, totalWeight: number, max: number): number =>
  Math.max(1, Math.min(Math.floor(max), Math.ceil((Math.floor(max) * weightOf(weight)) / Math.max(1, totalWeight))))
