import { Effect, Layer } from "effect"
import { AccountSettingsRepo } from "../../src/ports/AccountSettingsRepo.js"
import { AdminReadRepo } from "../../src/ports/AdminReadRepo.js"
import { AuditLog } from "../../src/ports/AuditLog.js"
import { AuthFailures } from "../../src/ports/AuthFailures.js"
import { ChangeFeed } from "../../src/ports/ChangeFeed.js"
import { CatalogRepo } from "../../src/ports/CatalogRepo.js"
import { JobLogRepo } from "../../src/ports/JobLogRepo.js"
import { JobRepo } from "../../src/ports/JobRepo.js"
import { layerAccounts } from "./MemoryAccounts.js"
import { accountSettingsRepo, adminReadRepo } from "./MemoryAdmin.js"
import { memoryAuditLog } from "./MemoryAuditLog.js"
import { memoryAuthFailures } from "./MemoryAuthFailures.js"
import { memoryChangeFeed } from "./MemoryChanges.js"
import { catalogRepo } from "./MemoryCatalog.js"
import { RetentionRepo } from "../../src/ports/RetentionRepo.js"
import { UploadRepo } from "../../src/ports/UploadRepo.js"
import { WebhookDeliveryRepo } from "../../src/ports/WebhookDeliveryRepo.js"
import { makeJobRepo } from "../../src/services/jobRepoRules.js"
import { jobLogRepo } from "./MemoryJobLogs.js"
import { memoryJobDriver } from "./MemoryJobs.js"
import { retentionRepo } from "./MemoryRetention.js"
import { uploadRepo } from "./MemoryUploads.js"
import { webhookDeliveryRepo } from "./MemoryWebhooks.js"
import { makeMemoryState } from "./state.js"

/** Every store port in memory, sharing one state: for tests and throwaway runs. */
export const layerMemoryStores = Layer.unwrap(
  Effect.gen(function*() {
    const state = yield* makeMemoryState
    // Scoped: the job rules' write batchers run in the layer's scope and stop when it closes.
    const jobs = yield* makeJobRepo(memoryJobDriver(state))
    return Layer.mergeAll(
      layerAccounts(state),
      Layer.succeed(JobRepo, jobs),
      Layer.succeed(CatalogRepo, catalogRepo(state)),
      Layer.succeed(WebhookDeliveryRepo, webhookDeliveryRepo(state)),
      Layer.succeed(UploadRepo, uploadRepo(state)),
      Layer.succeed(RetentionRepo, retentionRepo(state)),
      Layer.succeed(JobLogRepo, jobLogRepo(state)),
      Layer.succeed(AdminReadRepo, adminReadRepo(state)),
      Layer.succeed(AccountSettingsRepo, accountSettingsRepo(state)),
      Layer.succeed(AuditLog, memoryAuditLog()),
      Layer.succeed(AuthFailures, memoryAuthFailures()),
      Layer.succeed(ChangeFeed, memoryChangeFeed(state))
    )
  })
)
