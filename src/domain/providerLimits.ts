import { type CatalogDocument, type ProviderLimit, routesOf } from "./catalog.js"

/** A model version, as the jobs table names it. */
export interface VersionRef {
  readonly model: string
  readonly version: string
}

/** Jobs counted together against one limit: a provider's, or one of its models'. */
export interface LimitScope extends ProviderLimit {
  readonly key: string
}

/** What the catalog's limits mean for a claim. */
export interface LimitPlan {
  readonly scopes: ReadonlyArray<LimitScope>
  /** Every version under a limit, with the keys of the scopes it counts in. */
  readonly versions: ReadonlyArray<VersionRef & { readonly scopes: ReadonlyArray<string> }>
}

export const NO_LIMITS: LimitPlan = { scopes: [], versions: [] }

const limits = (limit: ProviderLimit) => limit.maxInFlight !== undefined || limit.startsPerMinute !== undefined

const providerScopeKey = (providerId: string) => JSON.stringify([providerId])
const modelScopeKey = (providerId: string, providerModel: string) => JSON.stringify([providerId, providerModel])

/**
 * The scopes of every provider with limits, and the versions (of every status) each holds. A
 * version counts in the scopes of every route it may run on (routesOf: its `routes`, else the
 * model's provider): each route's provider, and that provider's limit on the route's own
 * provider model. Which route a job takes is only known at its start, after the claim, so the
 * claim counts it under all of them: no provider ever runs more than its limits allow, at the
 * cost of holding back a version with several routes while any one of them is full.
 */
export const limitPlanOf = (doc: CatalogDocument): LimitPlan => {
  const scopes: Array<LimitScope> = []
  /** Per provider with limits: its own scope's key (when it limits itself), its per-model limits. */
  const limited = new Map<string, { readonly own: string | undefined; readonly models: Readonly<Record<string, ProviderLimit>> }>()
  for (const provider of doc.providers) {
    if (provider.limits === undefined) continue
    const { models = {}, ...own } = provider.limits
    const providerScope = limits(own) ? providerScopeKey(provider.id) : undefined
    if (providerScope !== undefined) scopes.push({ key: providerScope, ...own })
    for (const [providerModel, limit] of Object.entries(models)) {
      if (limits(limit)) scopes.push({ key: modelScopeKey(provider.id, providerModel), ...limit })
    }
    limited.set(provider.id, { own: providerScope, models })
  }
  const versions: Array<VersionRef & { readonly scopes: ReadonlyArray<string> }> = []
  for (const model of doc.models) {
    for (const version of model.versions) {
      const held = new Set<string>()
      for (const route of routesOf(model, version)) {
        const provider = limited.get(route.providerId)
        if (provider === undefined) continue
        if (provider.own !== undefined) held.add(provider.own)
        const modelLimit = provider.models[route.model]
        if (modelLimit !== undefined && limits(modelLimit)) held.add(modelScopeKey(route.providerId, route.model))
      }
      if (held.size > 0) versions.push({ model: model.slug, version: version.versionId, scopes: [...held] })
    }
  }
  return { scopes, versions }
}

/** What a store counts for a limited claim: jobs processing per version, starts in the last minute per scope. */
export interface LimitUsage {
  readonly inFlight: ReadonlyArray<VersionRef & { readonly count: number }>
  readonly starts: ReadonlyArray<{ readonly scope: string; readonly count: number }>
}

const versionKey = (ref: VersionRef) => `${ref.model}\u0000${ref.version}`

/** How many more jobs each scope may start now. */
export const roomsOf = (plan: LimitPlan, usage: LimitUsage): Map<string, number> => {
  const inFlight = new Map<string, number>()
  const counted = new Map(usage.inFlight.map((row) => [versionKey(row), row.count]))
  for (const version of plan.versions) {
    for (const scope of version.scopes) inFlight.set(scope, (inFlight.get(scope) ?? 0) + (counted.get(versionKey(version)) ?? 0))
  }
  const starts = new Map(usage.starts.map((row) => [row.scope, row.count]))
  return new Map(plan.scopes.map((scope) => {
    const byFlight = scope.maxInFlight === undefined ? Infinity : scope.maxInFlight - (inFlight.get(scope.key) ?? 0)
    const byRate = scope.startsPerMinute === undefined ? Infinity : scope.startsPerMinute - (starts.get(scope.key) ?? 0)
    return [scope.key, Math.max(0, Math.min(byFlight, byRate))]
  }))
}

/** Per version with room, the oldest pending jobs worth reading: its tightest scope's room, at most `limit`. */
export const candidateCounts = (
  plan: LimitPlan,
  rooms: ReadonlyMap<string, number>,
  limit: number
): ReadonlyArray<VersionRef & { readonly limit: number }> =>
  plan.versions.flatMap((version) => {
    const room = Math.min(limit, ...version.scopes.map((scope) => rooms.get(scope) ?? 0))
    return room > 0 ? [{ model: version.model, version: version.version, limit: room }] : []
  })

/**
 * The candidates a claim takes, in the order given (oldest first), up to `limit`: each only while
 * every scope it counts in still has room, which it then uses up. Answers them with the starts
 * they add per scope.
 */
export const pickWithinLimits = <J extends VersionRef>(
  plan: LimitPlan,
  rooms: ReadonlyMap<string, number>,
  candidates: ReadonlyArray<J>,
  limit: number
): { readonly picked: ReadonlyArray<J>; readonly starts: ReadonlyArray<{ readonly scope: string; readonly count: number }> } => {
  const left = new Map(rooms)
  const scopesOf = new Map(plan.versions.map((version) => [versionKey(version), version.scopes]))
  const picked: Array<J> = []
  for (const candidate of candidates) {
    if (picked.length >= limit) break
    const scopes = scopesOf.get(versionKey(candidate))
    if (scopes === undefined || scopes.some((scope) => (left.get(scope) ?? 0) < 1)) continue
    for (const scope of scopes) left.set(scope, left.get(scope)! - 1)
    picked.push(candidate)
  }
  const starts = [...left].flatMap(([scope, room]) => {
    const used = (rooms.get(scope) ?? 0) - room
    return used > 0 ? [{ scope, count: used }] : []
  })
  return { picked, starts }
}
