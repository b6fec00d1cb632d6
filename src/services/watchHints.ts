/**
 * Which keys were hinted since a mark, remembered for the last two generations of hints only.
 * A watcher reads its job, then joins the job's watch; a hint between the two would be lost
 * without a read at joining. Marking before the read and asking `since` after joining makes
 * that read happen only when a hint did come in between, instead of once for every watcher.
 * Memory stays bounded: a mark older than both generations answers true (read to be safe).
 */
const GENERATION = 10_000

export const makeHintLog = <K>() => {
  let seq = 0
  let allAt = 0
  let current = new Map<K, number>()
  let currentStart = 0
  let previous = new Map<K, number>()
  let previousStart = 0
  return {
    mark: (): number => seq,
    record: (key: K) => {
      seq++
      if (current.size >= GENERATION) {
        previous = current
        previousStart = currentStart
        current = new Map()
        currentStart = seq - 1
      }
      current.set(key, seq)
    },
    /** A hint for every key (after changes whose keys are unknown, or a gap in the hints). */
    recordAll: () => {
      seq++
      allAt = seq
    },
    /** Whether `key` may have been hinted after `mark`. */
    since: (key: K, mark: number): boolean => {
      if (allAt > mark || mark < previousStart) return true
      return (current.get(key) ?? previous.get(key) ?? 0) > mark
    }
  } as const
}
