/**
 * genjobs/client: the engine's API from any fetch runtime (Node 22+, browsers, Deno, Bun,
 * workers), with no runtime dependency: `createClient` for Promises (run, subscribe, uploads,
 * pages, typed errors, retries) and `verifyWebhook` on WebCrypto. It loads no package, no Node
 * module and nothing of the server; its bundle stays under 10 KiB gzipped (test/client/bundle.test.ts).
 * The Effect client is `genjobs/client/effect`. See docs/client.md.
 */
export {
  type ChangeParams,
  type ClientOptions,
  createClient,
  type GenjobsClient,
  type ListParams,
  type LogParams,
  type RunOptions,
  type SubmitOptions
} from "../src/client/createClient.js"
export { type ClientErrorCode, GenjobsError, JobFailedError } from "../src/client/errors.js"
export type { FetchLike } from "../src/client/transport.js"
export type { WaitOptions } from "../src/client/waitForJob.js"
export type { UploadBody, UploadOptions } from "../src/client/upload.js"
export type {
  AccountOverview,
  BudgetStatus,
  Cancelled,
  Change,
  ChangePage,
  CostEstimate,
  FailureType,
  Job,
  JobFailure,
  JobInput,
  JobLogLine,
  JobLogPage,
  JobOutput,
  JobPage,
  JobStatus,
  JobSummary,
  Model,
  Models,
  ModelSummary,
  ModelVersion,
  QueuePlace,
  Submitted,
  TimeRange,
  Upload
} from "../src/client/types.js"
export { verifyWebhook } from "../src/client/verifyWebhook.js"
export type { VerifyOptions, VerifyResult, WebhookHeaders } from "../src/domain/webhookRequest.js"
