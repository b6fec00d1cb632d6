import type { AccountRepo } from "../../ports/AccountRepo.js"
import type { AccountSettingsRepo } from "../../ports/AccountSettingsRepo.js"
import type { ApiKeyRepo } from "../../ports/ApiKeyRepo.js"
import type { AuditLog } from "../../ports/AuditLog.js"
import type { WebhookDeliveryRepo } from "../../ports/WebhookDeliveryRepo.js"
import type { WebhookSignal } from "../../ports/WebhookSignal.js"
import type { Catalog } from "../Catalog.js"

/** What the operator's writes are built from; each takes only the part it uses. */
export interface AdminDeps {
  readonly accounts: AccountRepo["Type"]
  readonly keys: ApiKeyRepo["Type"]
  readonly settings: AccountSettingsRepo["Type"]
  readonly audit: AuditLog["Type"]
  readonly catalog: Catalog["Type"]
  readonly deliveries: WebhookDeliveryRepo["Type"]
  readonly webhookSignal: WebhookSignal["Type"]
}
