/** The engine's core: composition over ports, services, ports, errors, webhook verification. */
export {
  composeEngine,
  type Engine,
  type EngineContext,
  type EngineParts,
  EngineServicesLive,
  type FilePorts,
  startEngine,
  type StartOptions,
  type StorePorts
} from "./engine.js"
export { type EngineFetch, makeWebHandler, type RequestInfo, type WebHandlerOptions } from "./http/webHandler.js"
export { HttpConfig, type HttpOptions, type HttpSettings } from "./http/HttpConfig.js"
export { EngineConfig, type EngineSettings, defaultEngineSettings } from "./services/EngineConfig.js"
export { Accounts, type AccountOverview } from "./services/Accounts.js"
export { Admin } from "./services/Admin.js"
export { Auth, type Caller } from "./services/Auth.js"
export { Catalog } from "./services/Catalog.js"
export { Jobs } from "./services/Jobs.js"
export { JobFollow, MAX_WAIT_SECONDS } from "./services/JobFollow.js"
export { Worker } from "./services/Worker.js"
export { Uploads, UploadSigningSecret } from "./services/Uploads.js"
export { UploadSweeper, type SweepResult } from "./services/UploadSweeper.js"
export { Webhooks } from "./services/Webhooks.js"
export { WebhookDispatcher } from "./services/WebhookDispatcher.js"
export { AccountRepo } from "./ports/AccountRepo.js"
export { ApiKeyRepo } from "./ports/ApiKeyRepo.js"
export { type Blob, type BlobReader, BlobStore } from "./ports/BlobStore.js"
export { CatalogRepo } from "./ports/CatalogRepo.js"
export {
  type GeneratedFile,
  type GeneratedOutput,
  GenerationFailed,
  type GenerationRequest,
  type Generator,
  Generators,
  layerGenerators
} from "./ports/Generator.js"
export { JobRepo } from "./ports/JobRepo.js"
export type { IdempotencyRecord, JobLedgerEntry, JobStoreDriver } from "./ports/JobStoreDriver.js"
export { makeJobRepo } from "./services/jobRepoRules.js"
export { JobSignal } from "./ports/JobSignal.js"
export { JobEvents } from "./ports/JobEvents.js"
export { WebhookSignal } from "./ports/WebhookSignal.js"
export { UploadRepo } from "./ports/UploadRepo.js"
export { UploadTarget } from "./ports/UploadTarget.js"
export { WebhookDeliveryRepo } from "./ports/WebhookDeliveryRepo.js"
export { WebhookSender } from "./ports/WebhookSender.js"
export { EngineError } from "./domain/errors.js"
export { signatureHeader, signWebhook, verifyWebhook, type VerifyResult } from "./domain/webhookSignature.js"
export { Job, JobError, JobStatus, OutputItem, OutputType } from "./domain/job.js"
export { CatalogDocument, CatalogModel, ModelVersion } from "./domain/catalog.js"
export { Account, ApiKey, LedgerEntry, Scope } from "./domain/account.js"
