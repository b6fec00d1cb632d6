import type { Account } from "./account.js"

/** The least and greatest fair-share weight an account can have. */
export const MIN_FAIR_SHARE_WEIGHT = 1
export const MAX_FAIR_SHARE_WEIGHT = 1_000

/**
 * The account's fair-share weight: how many turns its lane gets on a broker to another lane's one.
 * Read in this one place, so the account's stored field (`fairShareWeight`, default 1) arrives here
 * alone; a value outside 1..1000 or not an integer counts as the nearest one that is.
 */
export const fairShareWeightOf = (account: Account): number =>
  clampWeight((account as { readonly fairShareWeight?: number }).fairShareWeight ?? MIN_FAIR_SHARE_WEIGHT)

/** A weight as the brokers' lanes use it: an integer within 1..1000 (1 for anything unreadable). */
export const clampWeight = (weight: number): number =>
  Number.isFinite(weight) ? Math.min(MAX_FAIR_SHARE_WEIGHT, Math.max(MIN_FAIR_SHARE_WEIGHT, Math.floor(weight))) : MIN_FAIR_SHARE_WEIGHT
