import type { AccountRepo } from "../../ports/AccountRepo.js"
import type { AccountSettingsRepo } from "../../ports/AccountSettingsRepo.js"
import type { ApiKeyRepo } from "../../ports/ApiKeyRepo.js"
import type { AuditLog } from "../../ports/AuditLog.js"
import type { WebhookDeliveryRepo } from "../../ports/WebhookDeliveryRepo.js"
import type { WebhookSignal } from "../../ports/WebhookSignal.js"
import type { Catalog } from "../Catalog.js"

/** What the operator's writes are built from; each takes only the part it uses. */
export interface AdminDeps {
  readonly accounts: AccountRepo["Service"]
  readonly keys: ApiKeyRepo["Service"]
  readonly settings: AccountSettingsRepo["Service"]
  readonly audit: AuditLog["Service"]
  readonly catalog: Catalog["Service"]
  readonly deliveries: WebhookDeliveryRepo["Service"]
  readonly webhookSignal: WebhookSignal["Service"]
}
