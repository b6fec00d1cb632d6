import { Effect } from "effect"
import type { StoreError } from "../../domain/errors.js"
import type { Job } from "../../domain/job.js"
import { type LimitPlan, limitPlanOf } from "../../domain/providerLimits.js"
import type { Catalog } from "../Catalog.js"

/** The catalog's provider limits as claims use them. */
export interface LimitPlans {
  /** The current plan, worked out again only when the catalog's revision changes. */
  readonly current: Effect.Effect<LimitPlan, StoreError>
  /** Whether the job's version is under a limit, by the last plan worked out (none yet: not limited). */
  readonly isLimited: (job: Job) => boolean
  /** Whether any version is under a limit, by the last plan worked out: only then can a job's end free room. */
  readonly anyLimited: () => boolean
}

export const limitedIn = (plan: LimitPlan, job: Job) => plan.versions.some((v) => v.model === job.model && v.version === job.version)

export const makeLimitPlans = (catalog: Catalog["Service"]): LimitPlans => {
  let limits: { readonly revision: number; readonly plan: LimitPlan } | undefined
  return {
    current: Effect.map(catalog.snapshot, (stored) => {
      if (limits?.revision !== stored.revision) limits = { revision: stored.revision, plan: limitPlanOf(stored.document) }
      return limits.plan
    }),
    isLimited: (job) => (limits === undefined ? false : limitedIn(limits.plan, job)),
    anyLimited: () => limits !== undefined && limits.plan.versions.length > 0
  }
}
