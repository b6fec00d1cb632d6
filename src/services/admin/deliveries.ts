import { Effect } from "effect"
import { type AuditActor, SYSTEM_ACTOR } from "../../domain/audit.js"
import type { NotFound, StoreError } from "../../domain/errors.js"
import type { DeliveryNotRetryable, WebhookDelivery } from "../../domain/webhook.js"
import { WebhookDeliveryRepo } from "../../ports/WebhookDeliveryRepo.js"
import { reopenFailedDelivery } from "../Webhooks.js"
import { audited } from "./audited.js"
import type { AdminDeps } from "./deps.js"

/** Sends a failed delivery of any account once more, now, by the rule an account's own retry follows. */
export const retryDelivery = (deps: Pick<AdminDeps, "audit" | "deliveries" | "webhookSignal">) =>
(id: string, by: AuditActor = SYSTEM_ACTOR): Effect.Effect<WebhookDelivery, NotFound | DeliveryNotRetryable | StoreError> =>
  audited(
    deps,
    by,
    "delivery.retry",
    reopenFailedDelivery(id, () => true).pipe(Effect.provideService(WebhookDeliveryRepo, deps.deliveries)),
    (delivery) => ({ target: delivery.id, summary: { accountId: delivery.accountId, jobId: delivery.jobId } })
  ).pipe(
    // Woken once the change is committed, so a dispatcher that wakes finds it due.
    Effect.tap(() => deps.webhookSignal.notify)
  )
