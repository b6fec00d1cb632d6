import { Layer } from "effect"
import { Admin } from "./services/Admin.js"
import { Auth } from "./services/Auth.js"
import { Catalog } from "./services/Catalog.js"
import { Jobs } from "./services/Jobs.js"
import { Webhooks } from "./services/Webhooks.js"
import { Worker } from "./services/Worker.js"

/**
 * The engine's services over its ports. Provide stores (AccountRepo, ApiKeyRepo, JobRepo,
 * CatalogRepo, WebhookDeliveryRepo), JobSignal, BlobStore, Generators and EngineConfig. The
 * webhook dispatcher (WebhookDispatcher.layer) also needs a WebhookSender.
 */
export const EngineServicesLive = Layer.mergeAll(Auth.layer, Jobs.layer, Admin.layer, Worker.layer, Webhooks.layer).pipe(
  Layer.provideMerge(Catalog.layer)
)
