/**
 * genjobs/client: the engine's API from any fetch runtime (Node 22+, browsers, Deno, Bun,
 * workers). `createClient` for Promises (run, subscribe, uploads, pages, typed errors, retries),
 * `makeEffectClient` for Effect, from the same HttpApi definition as the server. Nothing here
 * loads the server or a Node module. See docs/client.md.
 */
export { type ClientOptions, createClient, type GenjobsClient, type ListParams, type RunOptions, type SubmitOptions } from "../src/client/createClient.js"
export { type ClientErrorCode, GenjobsError, JobFailedError } from "../src/client/errors.js"
export type { FetchLike } from "../src/client/transport.js"
export type { WaitOptions } from "../src/client/waitForJob.js"
export type { UploadBody, UploadOptions } from "../src/client/upload.js"
export type {
  AccountOverview,
  Cancelled,
  CostEstimate,
  Job,
  JobInput,
  JobPage,
  JobStatus,
  JobSummary,
  Model,
  Models,
  Submitted,
  Upload
} from "../src/client/types.js"
export { type EffectClient, makeEffectClient } from "../src/client/effectClient.js"
export { verifyWebhook } from "../src/client/verifyWebhook.js"
export type { VerifyOptions, VerifyResult } from "../src/domain/webhookRequest.js"
export { EngineApi } from "../src/http/Api.js"
