import { Context, Effect, Layer } from "effect"
import { AccountRepo } from "../ports/AccountRepo.js"
import { AccountSettingsRepo } from "../ports/AccountSettingsRepo.js"
import { ApiKeyRepo } from "../ports/ApiKeyRepo.js"
import { AuditLog } from "../ports/AuditLog.js"
import { WebhookDeliveryRepo } from "../ports/WebhookDeliveryRepo.js"
import { WebhookSignal } from "../ports/WebhookSignal.js"
import { addCredits, createAccount, getAccount, ledger, rotateWebhookSecret, updateAccount } from "./admin/accounts.js"
import { previewCatalog, replaceCatalog } from "./admin/catalog.js"
import { retryDelivery } from "./admin/deliveries.js"
import type { AdminDeps } from "./admin/deps.js"
import { createKey, deactivateKey, updateKey } from "./admin/keys.js"
import { Catalog } from "./Catalog.js"

export { newWebhookSecret } from "./admin/accounts.js"
export type { CatalogPreview } from "./admin/catalog.js"
export type { CreatedKey } from "./admin/keys.js"

/**
 * The operator's writes. Each one is recorded in the audit log with its actor (SYSTEM_ACTOR
 * when the host's code calls without one) in the same transaction as the change. Each lives
 * under admin/, by what it changes; this wires them from the services they use.
 */
export const make = Effect.gen(function*() {
  const deps: AdminDeps = {
    accounts: yield* AccountRepo,
    keys: yield* ApiKeyRepo,
    settings: yield* AccountSettingsRepo,
    audit: yield* AuditLog,
    catalog: yield* Catalog,
    deliveries: yield* WebhookDeliveryRepo,
    webhookSignal: yield* WebhookSignal
  }
  return {
    createAccount: createAccount(deps),
    getAccount: getAccount(deps),
    updateAccount: updateAccount(deps),
    addCredits: addCredits(deps),
    createKey: createKey(deps),
    updateKey: updateKey(deps),
    deactivateKey: deactivateKey(deps),
    ledger: ledger(deps),
    rotateWebhookSecret: rotateWebhookSecret(deps),
    replaceCatalog: replaceCatalog(deps),
    previewCatalog: previewCatalog(deps),
    retryDelivery: retryDelivery(deps)
  } as const
})

export class Admin extends Context.Tag("genjobs/Admin")<Admin, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Admin, make)
}
