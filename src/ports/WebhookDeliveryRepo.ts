import { Context, type Effect, type Option } from "effect"
import type { StoreError } from "../domain/errors.js"
import type { JobCursor } from "../domain/cursor.js"
import type { DeliveryAttempt, DeliveryStatus, WebhookDelivery } from "../domain/webhook.js"

export type AttemptOutcome =
  | { readonly status: "sent" }
  | { readonly status: "pending"; readonly nextAttemptAt: number }
  | { readonly status: "failed" }

/**
 * Webhook deliveries. Rows are written by JobRepo together with the job's terminal state
 * (outbox); dispatchers claim due ones with a lease, so several never send the same attempt.
 */
export class WebhookDeliveryRepo extends Context.Service<WebhookDeliveryRepo, {
  /**
   * Up to `limit` pending deliveries whose next attempt is due and that no live lease holds,
   * leased to `workerId`, in the order `limit` claims of one each would take them: fair across
   * accounts, an account with `maxPerAccount` live leases gets none, and of the others the one
   * with the fewest live leases goes first (then the oldest due). Claims are atomic, so parallel
   * claims never exceed `maxPerAccount` nor share a delivery. Empty when nothing is due.
   */
  readonly claimDue: (options: {
    readonly workerId: string
    readonly now: number
    readonly leaseMs: number
    readonly maxPerAccount: number
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<WebhookDelivery>, StoreError>
  /** The earliest next attempt of a pending delivery later than `now`, so a dispatcher can sleep until then. */
  readonly nextAttemptAfter: (now: number) => Effect.Effect<Option.Option<number>, StoreError>
  /**
   * Appends the attempt and moves the delivery on, only while `workerId` still holds the lease
   * (an expired lease nobody took over still counts); false when another claim took it, so an
   * attempt's outcome is written at most once.
   */
  readonly recordAttempt: (
    id: string,
    workerId: string,
    attempt: DeliveryAttempt,
    outcome: AttemptOutcome
  ) => Effect.Effect<boolean, StoreError>
  /**
   * Whether a claim and attempts' records can be written at the same time (PostgreSQL's row
   * locks): then a dispatcher in a backlog claims again while the last claim's outcomes are
   * being recorded. False (or absent) where writes go one at a time (SQLite) or take no time (memory).
   */
  readonly claimsBesideRecords?: boolean | undefined
  readonly forJob: (jobId: string) => Effect.Effect<ReadonlyArray<WebhookDelivery>, StoreError>
  /** An account's deliveries, newest first over (createdAt, id); up to `limit + 1` rows. */
  readonly list: (query: {
    readonly accountId: string
    readonly jobId?: string | undefined
    readonly status?: DeliveryStatus | undefined
    readonly after?: JobCursor | undefined
    readonly limit: number
  }) => Effect.Effect<ReadonlyArray<WebhookDelivery>, StoreError>
  readonly get: (id: string) => Effect.Effect<Option.Option<WebhookDelivery>, StoreError>
  /** failed -> pending, due at `now`; None unless the delivery exists and has failed. */
  readonly retry: (id: string, now: number) => Effect.Effect<Option.Option<WebhookDelivery>, StoreError>
}>()("genjobs/WebhookDeliveryRepo") {}
