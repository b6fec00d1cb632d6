import { createHash } from "node:crypto"
import type { EffectiveRoute } from "./catalog.js"

/** A number in (0, 1) drawn from a string: the same job always draws the same order. */
const unitHash = (text: string): number => (createHash("sha256").update(text).digest().readUInt32BE(0) + 0.5) / 2 ** 32

const weighted = (route: EffectiveRoute) => route.weight !== undefined

/**
 * The order a job tries a version's routes in. A route without `weight` keeps its place; a run
 * of consecutive routes that all carry one is a rank, whose routes the job takes in an order
 * drawn by weight (a route of weight 3 comes first three times as often as one of weight 1,
 * the weighted shuffle of Efraimidis and Spirakis), seeded by `seed` (the job id) so that
 * every attempt of the job, in any process, tries them in the same order.
 */
export const routeOrder = (routes: ReadonlyArray<EffectiveRoute>, seed: string): ReadonlyArray<EffectiveRoute> => {
  // Nearly every version has no weighted route: its order is the catalog's, asked on every start.
  if (!routes.some(weighted)) return routes
  const ordered: Array<EffectiveRoute> = []
  let rank: Array<EffectiveRoute> = []
  const closeRank = () => {
    if (rank.length === 0) return
    const key = (route: EffectiveRoute) => Math.log(unitHash(`${seed}:${route.index}`)) / route.weight!
    ordered.push(...rank.map((route) => ({ route, key: key(route) })).sort((a, b) => b.key - a.key).map(({ route }) => route))
    rank = []
  }
  for (const route of routes) {
    if (route.weight === undefined) {
      closeRank()
      ordered.push(route)
    } else rank.push(route)
  }
  closeRank()
  return ordered
}
