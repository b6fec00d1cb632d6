/**
 * genjobs: the engine composed from one settings object (`makeEngine`, `layerEngine`,
 * `layerEngineConfig`), its services and ports, errors, and webhook verification.
 * Stores and file adapters come from `genjobs/memory`, `/sqlite`, `/postgres` and `/s3`;
 * framework mounts from `genjobs/http`; a one-line test engine from `genjobs/testing`.
 */
export * from "../src/index.js"
export { type EngineOptions, layerEngine, makeEngine } from "./engine.js"
export {
  EngineEnv,
  type EngineEnvDefaults,
  type EngineEnvSettings,
  engineOptionsFromEnv,
  inputUrlPrefixesOf,
  layerEngineConfig
} from "./config.js"
export { invalidSetting, satisfying, settingRefusalText } from "./settingChecks.js"
export { loadOptionalEntry, MissingPackagesError, type OptionalEntry } from "./optionalEntry.js"
export { localFiles, type LocalFilesOptions } from "../adapters/blob/localFiles.js"
export { layerFsBlobStore, makeFsBlobStore } from "../adapters/blob/FsBlobStore.js"
export { layerSignedUploadTarget } from "../adapters/blob/SignedUploadTarget.js"
export { DEMO_PROVIDER_ID, makeDemoProvider } from "../adapters/generators/demo/DemoGenerator.js"
export { demoCatalog } from "../adapters/generators/demo/demoCatalog.js"
export { layerNodeWebhookSender, makeNodeWebhookSender } from "../adapters/webhooks/NodeWebhookSender.js"
export { guardedFetch, layerGuardedHttpClient } from "../adapters/net/guardedHttpClient.js"
