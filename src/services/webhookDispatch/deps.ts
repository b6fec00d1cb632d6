import type { Effect, Option } from "effect"
import type { Account } from "../../domain/account.js"
import type { StoreError } from "../../domain/errors.js"
import type { AccountId } from "../../domain/ids.js"
import type { WebhookDelivery } from "../../domain/webhook.js"
import type { WebhookDeliveryRepo } from "../../ports/WebhookDeliveryRepo.js"
import type { WebhookSender } from "../../ports/WebhookSender.js"
import type { WebhookSignal } from "../../ports/WebhookSignal.js"
import type { EngineConfig } from "../EngineConfig.js"

/** What the WebhookDispatcher's pieces are built from; each takes only the part it uses. */
export interface DispatchDeps {
  readonly deliveries: WebhookDeliveryRepo["Service"]
  /** The account a delivery is signed for: its secrets and whether it takes Standard Webhooks headers. */
  readonly signingAccount: (id: AccountId) => Effect.Effect<Option.Option<Account>, StoreError>
  readonly sender: WebhookSender["Service"]
  readonly signal: WebhookSignal["Service"]
  readonly config: EngineConfig["Service"]
  /** How long a claim holds its delivery: the attempt's deadline and time to record its outcome. */
  readonly leaseMs: number
  /** Leases up to `limit` due deliveries for a new lease holder of `workerId` (see claim.ts). */
  readonly claim: (workerId: string, limit: number) => Effect.Effect<ReadonlyArray<WebhookDelivery>, StoreError>
}
