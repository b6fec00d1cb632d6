/**
 * What a DueHeap orders: when the item is due (epoch ms), and where it sits in the heap (-1 when
 * out of it). The heap keeps `slot` current, so an item is moved or removed in O(log n) without a
 * search and without stale copies left behind.
 */
export interface Due {
  dueAt: number
  slot: number
}

/**
 * A binary min-heap of items by due time: the watch list's timetable. Plain synchronous data:
 * 10,000 waiting generations are 10,000 array cells, not 10,000 timers or fibers.
 */
export class DueHeap<T extends Due> {
  private readonly items: Array<T> = []

  get size(): number {
    return this.items.length
  }

  /** The earliest due time, or undefined when empty. */
  nextDueAt(): number | undefined {
    return this.items[0]?.dueAt
  }

  /** Adds `item` due at `dueAt`, or moves it there when it is in the heap already. */
  schedule(item: T, dueAt: number): void {
    if (item.slot >= 0) {
      const earlier = dueAt < item.dueAt
      item.dueAt = dueAt
      if (earlier) this.up(item.slot)
      else this.down(item.slot)
      return
    }
    item.dueAt = dueAt
    item.slot = this.items.length
    this.items.push(item)
    this.up(item.slot)
  }

  /** Takes `item` out (does nothing when it is not in the heap). */
  remove(item: T): void {
    const slot = item.slot
    if (slot < 0) return
    const last = this.items.pop()!
    item.slot = -1
    if (last === item) return
    this.items[slot] = last
    last.slot = slot
    this.up(slot)
    this.down(last.slot)
  }

  /** Takes out and answers the earliest item if it is due at `now`, else undefined. */
  popDue(now: number): T | undefined {
    const first = this.items[0]
    if (first === undefined || first.dueAt > now) return undefined
    this.remove(first)
    return first
  }

  private up(slot: number): void {
    const items = this.items
    const item = items[slot]!
    while (slot > 0) {
      const parentSlot = (slot - 1) >> 1
      const parent = items[parentSlot]!
      if (parent.dueAt <= item.dueAt) break
      items[slot] = parent
      parent.slot = slot
      slot = parentSlot
    }
    items[slot] = item
    item.slot = slot
  }

  private down(slot: number): void {
    const items = this.items
    const n = items.length
    const item = items[slot]!
    for (;;) {
      const left = 2 * slot + 1
      if (left >= n) break
      const right = left + 1
      const child = right < n && items[right]!.dueAt < items[left]!.dueAt ? right : left
      if (items[child]!.dueAt >= item.dueAt) break
      items[slot] = items[child]!
      items[slot]!.slot = slot
      slot = child
    }
    items[slot] = item
    item.slot = slot
  }
}
