import { Layer } from "effect"
import { Admin } from "./services/Admin.js"
import { Auth } from "./services/Auth.js"
import { Catalog } from "./services/Catalog.js"
import { Jobs } from "./services/Jobs.js"
import { Uploads } from "./services/Uploads.js"
import { UploadSweeper } from "./services/UploadSweeper.js"
import { Webhooks } from "./services/Webhooks.js"
import { Worker } from "./services/Worker.js"

/**
 * The engine's services over its ports. Provide stores (AccountRepo, ApiKeyRepo, JobRepo,
 * CatalogRepo, WebhookDeliveryRepo, UploadRepo), JobSignal, BlobStore, UploadTarget,
 * Generators and EngineConfig; the HTTP layer also needs UploadSigningSecret. The
 * webhook dispatcher (WebhookDispatcher.layer) also needs a WebhookSender.
 */
export const EngineServicesLive = Layer.mergeAll(
  Auth.layer,
  Jobs.layer,
  Admin.layer,
  Worker.layer,
  Webhooks.layer,
  Uploads.layer,
  UploadSweeper.layer
).pipe(
  Layer.provideMerge(Catalog.layer)
)
