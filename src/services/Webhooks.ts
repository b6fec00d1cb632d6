import { Clock, Context, Effect, Layer, Option } from "effect"
import type { OperationNotAllowed } from "../domain/accessRefusals.js"
import { NotFound, type StoreError, type ValidationError } from "../domain/errors.js"
import { DeliveryNotRetryable, DeliveryStatus, type WebhookDelivery } from "../domain/webhook.js"
import { WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { type Caller, requireScope } from "./Auth.js"
import { readPageRequest, toPage } from "./paging.js"

export interface DeliveryPage {
  readonly deliveries: ReadonlyArray<WebhookDelivery>
  readonly nextCursor: string | null
  readonly hasMore: boolean
}

/**
 * The rule of every retry, the account's and the operator's: a failed delivery goes back to
 * pending, due now. A delivery `visible` refuses is answered as unknown, so an account cannot
 * learn another's ids. The caller wakes the dispatchers once the change is committed.
 */
export const reopenFailedDelivery = (
  id: string,
  visible: (delivery: WebhookDelivery) => boolean
): Effect.Effect<WebhookDelivery, NotFound | DeliveryNotRetryable | StoreError, WebhookDeliveryRepo> =>
  Effect.gen(function*() {
    const repo = yield* WebhookDeliveryRepo
    const found = yield* repo.get(id)
    if (Option.isNone(found) || !visible(found.value)) {
      return yield* Effect.fail(new NotFound({ message: `No webhook delivery "${id}"`, details: { deliveryId: id } }))
    }
    const again = yield* repo.retry(id, yield* Clock.currentTimeMillis)
    if (Option.isNone(again)) {
      return yield* Effect.fail(
        new DeliveryNotRetryable({ message: `Only failed deliveries can be retried; this one is ${found.value.status}`, details: {
          deliveryId: id,
          status: found.value.status
        } })
      )
    }
    return again.value
  })

/** Operators' view of webhook deliveries: the account's own, never another's. */
export const make = Effect.gen(function*() {
  const repo = yield* WebhookDeliveryRepo
  const signal = yield* WebhookSignal

  const list = (
    caller: Caller,
    request: { readonly limit?: number | undefined; readonly cursor?: string | undefined; readonly jobId?: string | undefined; readonly status?: string | undefined }
  ): Effect.Effect<DeliveryPage, OperationNotAllowed | ValidationError | StoreError> =>
    Effect.gen(function*() {
      yield* requireScope(caller, "check_status")
      const { after, limit, status } = yield* readPageRequest(request, DeliveryStatus.literals)
      const rows = yield* repo.list({ accountId: caller.account.id, jobId: request.jobId, status, after, limit })
      const page = toPage(rows, limit)
      return { deliveries: page.items, hasMore: page.hasMore, nextCursor: page.nextCursor }
    })

  /** Sends a failed delivery of the caller's account once more, now. */
  const retry = (caller: Caller, id: string): Effect.Effect<WebhookDelivery, OperationNotAllowed | NotFound | DeliveryNotRetryable | StoreError> =>
    Effect.gen(function*() {
      yield* requireScope(caller, "submit_job")
      const again = yield* reopenFailedDelivery(id, (delivery) => delivery.accountId === caller.account.id).pipe(
        Effect.provideService(WebhookDeliveryRepo, repo)
      )
      yield* signal.notify
      return again
    })

  return { list: Effect.fn("Webhooks.list")(list), retry: Effect.fn("Webhooks.retry")(retry) } as const
})

export class Webhooks extends Context.Service<Webhooks, Effect.Success<typeof make>>()("genjobs/Webhooks") {
  static readonly layer = Layer.effect(Webhooks, make)
}
