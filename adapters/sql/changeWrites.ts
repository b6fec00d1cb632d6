import { Effect } from "effect"
import type { AccountRepo } from "../../src/ports/AccountRepo.js"
import type { AccountSettingsRepo } from "../../src/ports/AccountSettingsRepo.js"
import type { ApiKeyRepo } from "../../src/ports/ApiKeyRepo.js"
import type { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import type { ChangeTopic, StoreChanges } from "../../src/ports/StoreChanges.js"

interface CachedStores {
  readonly accounts: AccountRepo["Service"]
  readonly keys: ApiKeyRepo["Service"]
  readonly settings: AccountSettingsRepo["Service"]
  readonly catalog: CatalogRepo["Service"]
}

/**
 * The writes of what processes cache, each telling this process's caches once it committed (other
 * processes hear of it from the store: PgStoreChanges). A failed write tells them too: it may
 * have committed before its answer was lost.
 */
export const announcingChanges = (changes: StoreChanges["Service"], stores: CachedStores): CachedStores => {
  const announce = (topic: ChangeTopic) => <A, E, R>(write: Effect.Effect<A, E, R>) => Effect.ensuring(write, changes.changed(topic))
  const access = announce("access")
  return {
    accounts: {
      ...stores.accounts,
      rotateWebhookSecret: (id, secret, previousExpiresAt) => access(stores.accounts.rotateWebhookSecret(id, secret, previousExpiresAt))
    },
    keys: { ...stores.keys, deactivate: (id) => access(stores.keys.deactivate(id)) },
    settings: {
      update: (id, patch) => access(stores.settings.update(id, patch)),
      updateKeyBudget: (id, budget) => access(stores.settings.updateKeyBudget(id, budget))
    },
    catalog: { ...stores.catalog, replace: (document, ifRevision) => announce("catalog")(stores.catalog.replace(document, ifRevision)) }
  }
}
