import { Context, type Effect } from "effect"
import type { RecentFailures } from "../domain/authThrottle.js"
import type { StoreError } from "../domain/errors.js"

/**
 * Failed authentications per client and minute bucket (`failureBucket`), kept by the store so
 * every process sharing it counts the same failures. The throttle (services/AuthThrottle.ts)
 * decides; the store only counts.
 */
export class AuthFailures extends Context.Service<AuthFailures, {
  /** The client's failures in `bucket` and in the bucket before it. */
  readonly recent: (client: string, bucket: number) => Effect.Effect<RecentFailures, StoreError>
  /** Counts one more failure of the client in `bucket`. */
  readonly record: (client: string, bucket: number) => Effect.Effect<void, StoreError>
  /** Removes the counts of every bucket before `bucket`, which no longer count. */
  readonly prune: (bucket: number) => Effect.Effect<void, StoreError>
}>()("genjobs/AuthFailures") {}
