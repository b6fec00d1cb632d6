import type { Account } from "./account.js"
import type { Job } from "./job.js"

/**
 * Fair shares (issue 37): start-time fair queuing with each job's tag assigned at submit, so a
 * claim stays one ordered index read of pending jobs by `(fairKey, id)`. A job's key is its
 * account's place in the queue: one step after the account's last waiting job, never before
 * the first job waiting at all. Accounts with few jobs waiting therefore start their next job
 * about as soon as the busiest account starts its next; a weight shortens the step, so weight
 * 2 starts two jobs for each one of weight 1.
 */

/** The weight of an account that set none; weights are 1..MAX_FAIR_WEIGHT. */
export const DEFAULT_FAIR_WEIGHT = 1
export const MAX_FAIR_WEIGHT = 1000

/** An account's weight; accounts made before weights (and unknown ones) have the default. */
export const fairWeightOf = (account: Pick<Account, "fairShareWeight"> | undefined): number =>
  account?.fairShareWeight ?? DEFAULT_FAIR_WEIGHT

/** The key distance between two jobs of weight 1 of one account in a row. */
export const FAIR_STEP_UNIT = 1_000_000

/** The key distance between two jobs of one account in a row: FAIR_STEP_UNIT over the weight. */
export const fairStep = (weight: number): number => Math.floor(FAIR_STEP_UNIT / weight)

/**
 * The key of a job submitted now. `floor`: the smallest key among pending jobs (0 when none);
 * `lastOwn`: the largest key among the account's pending jobs (null when none). Keys derive
 * from what waits, not from a stored per-account clock, so an account's past never holds it
 * back (or lets it push ahead) once its jobs have left the queue.
 */
export const fairKeyOf = ({ floor, lastOwn, weight }: {
  readonly floor: number
  readonly lastOwn: number | null
  readonly weight: number
}): number => (lastOwn === null ? floor : Math.max(floor, lastOwn + fairStep(weight)))

/** Claim order of pending jobs, as the stores' index reads it: `(fairKey, id)`. */
export const claimOrder = (a: Job, b: Job): number =>
  a.fairKey - b.fairKey || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** A weight as the brokers' lanes carry it: an integer within 1..MAX_FAIR_WEIGHT (the default for anything unreadable). */
export const clampWeight = (weight: number): number =>
  Number.isFinite(weight) ? Math.min(MAX_FAIR_WEIGHT, Math.max(DEFAULT_FAIR_WEIGHT, Math.floor(weight))) : DEFAULT_FAIR_WEIGHT
