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
 * under admin/, by what it changes; this wires them from the services they use, each a named
 * use case (`Effect.fn`: a span and a stack frame by its name).
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
    createAccount: Effect.fn("Admin.createAccount")(createAccount(deps)),
    getAccount: Effect.fn("Admin.getAccount")(getAccount(deps)),
    updateAccount: Effect.fn("Admin.updateAccount")(updateAccount(deps)),
    addCredits: Effect.fn("Admin.addCredits")(addCredits(deps)),
    createKey: Effect.fn("Admin.createKey")(createKey(deps)),
    updateKey: Effect.fn("Admin.updateKey")(updateKey(deps)),
    deactivateKey: Effect.fn("Admin.deactivateKey")(deactivateKey(deps)),
    ledger: Effect.fn("Admin.ledger")(ledger(deps)),
    rotateWebhookSecret: Effect.fn("Admin.rotateWebhookSecret")(rotateWebhookSecret(deps)),
    replaceCatalog: Effect.fn("Admin.replaceCatalog")(replaceCatalog(deps)),
    previewCatalog: Effect.fn("Admin.previewCatalog")(previewCatalog(deps)),
    retryDelivery: Effect.fn("Admin.retryDelivery")(retryDelivery(deps))
  } as const
})

export class Admin extends Context.Service<Admin, Effect.Success<typeof make>>()("genjobs/Admin") {
  static readonly layer = Layer.effect(Admin, make)
}
