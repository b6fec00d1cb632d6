/**
 * The order webhook claims take due deliveries in (WebhookDeliveryRepo.claimDue). The SQL stores
 * write the same order in their statements; the memory store and the tests use this.
 */

/** A due delivery no live lease holds, as a claim sees it. */
export interface ClaimCandidate {
  readonly id: string
  readonly accountId: string
  readonly nextAttemptAt: number
}

const byDue = (a: ClaimCandidate, b: ClaimCandidate) =>
  a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * The deliveries `limit` claims of one each would take from `due`, in that order. One claim takes
 * the delivery of the account with the fewest attempts in flight, then the earliest due, then the
 * lowest id, and none of an account with `maxPerAccount` in flight; what it takes is then in
 * flight. So an account's k-th delivery in due order goes out with `inFlight + k` in flight (its
 * place), and the claims take the deliveries by place, then due time, then id.
 */
export const fairClaims = <C extends ClaimCandidate>(
  due: ReadonlyArray<C>,
  inFlight: ReadonlyMap<string, number>,
  maxPerAccount: number,
  limit: number
): Array<C> => {
  const taken = new Map<string, number>()
  const placed: Array<{ readonly delivery: C; readonly place: number }> = []
  for (const delivery of [...due].sort(byDue)) {
    const before = taken.get(delivery.accountId) ?? 0
    taken.set(delivery.accountId, before + 1)
    const place = (inFlight.get(delivery.accountId) ?? 0) + before
    if (place < maxPerAccount) placed.push({ delivery, place })
  }
  return placed
    .sort((a, b) => a.place - b.place || byDue(a.delivery, b.delivery))
    .slice(0, Math.max(0, limit))
    .map(({ delivery }) => delivery)
}

/**
 * Whether a claim's deliveries leave some account of theirs under `maxPerAccount`: while they are
 * all in flight, a claim can then still find one of its due deliveries. One that gave each of its
 * accounts the cap leaves them nothing until its attempts are recorded.
 */
export const claimLeavesRoom = (claimed: ReadonlyArray<{ readonly accountId: string }>, maxPerAccount: number): boolean => {
  const perAccount = new Map<string, number>()
  for (const { accountId } of claimed) perAccount.set(accountId, (perAccount.get(accountId) ?? 0) + 1)
  for (const n of perAccount.values()) if (n < maxPerAccount) return true
  return false
}
