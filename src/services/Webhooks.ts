import { Clock, Context, Effect, Layer, Option } from "effect"
import { decodeCursor, encodeCursor } from "../domain/cursor.js"
import { engineError, type EngineError, type StoreError } from "../domain/errors.js"
import { DeliveryStatus, type WebhookDelivery } from "../domain/webhook.js"
import { WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { type Caller, requireScope } from "./Auth.js"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./Jobs.js"

export interface DeliveryPage {
  readonly deliveries: ReadonlyArray<WebhookDelivery>
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

/** Operators' view of webhook deliveries: the account's own, never another's. */
export const make = Effect.gen(function*() {
  const repo = yield* WebhookDeliveryRepo

  const list = (
    caller: Caller,
    request: { readonly limit?: number | undefined; readonly cursor?: string | undefined; readonly jobId?: string | undefined; readonly status?: string | undefined }
  ): Effect.Effect<DeliveryPage, EngineError | StoreError> =>
    Effect.gen(function*() {
      yield* requireScope(caller, "check_status")
      const limit = request.limit ?? DEFAULT_PAGE_SIZE
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
        return yield* Effect.fail(engineError("VALIDATION_ERROR", `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`, { field: "limit" }))
      }
      if (request.status !== undefined && !DeliveryStatus.literals.includes(request.status as DeliveryStatus)) {
        return yield* Effect.fail(engineError("VALIDATION_ERROR", `status must be one of ${DeliveryStatus.literals.join(", ")}`, { field: "status" }))
      }
      const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor)
      if (request.cursor !== undefined && after === undefined) {
        return yield* Effect.fail(engineError("VALIDATION_ERROR", "cursor is not a cursor this API issued", { field: "cursor" }))
      }
      const rows = yield* repo.list({
        accountId: caller.account.id,
        jobId: request.jobId,
        status: request.status as DeliveryStatus | undefined,
        after,
        limit
      })
      const deliveries = rows.slice(0, limit)
      const last = deliveries[deliveries.length - 1]
      const hasMore = rows.length > limit
      return { deliveries, hasMore, nextCursor: hasMore && last !== undefined ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null }
    })

  /** Sends a failed delivery once more, now. */
  const retry = (caller: Caller, id: string): Effect.Effect<WebhookDelivery, EngineError | StoreError> =>
    Effect.gen(function*() {
      yield* requireScope(caller, "submit_job")
      const found = yield* repo.get(id)
      if (Option.isNone(found) || found.value.accountId !== caller.account.id) {
        return yield* Effect.fail(engineError("NOT_FOUND", `No webhook delivery "${id}"`, { deliveryId: id }))
      }
      const again = yield* repo.retry(id, yield* Clock.currentTimeMillis)
      if (Option.isNone(again)) {
        return yield* Effect.fail(
          engineError("DELIVERY_NOT_RETRYABLE", `Only failed deliveries can be retried; this one is ${found.value.status}`, {
            deliveryId: id,
            status: found.value.status
          })
        )
      }
      return again.value
    })

  return { list, retry } as const
})

export class Webhooks extends Context.Tag("genjobs/Webhooks")<Webhooks, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Webhooks, make)
}
