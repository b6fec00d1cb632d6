import { JobFailedError } from "./errors.js"
import { makeTransport, type TransportOptions } from "./transport.js"
import type {
  AccountOverview,
  Cancelled,
  Change,
  ChangePage,
  CostEstimate,
  Job,
  JobInput,
  JobLogPage,
  JobPage,
  JobStatus,
  JobSummary,
  Model,
  Models,
  Submitted,
  Upload
} from "./types.js"
import { type UploadBody, uploadFile, type UploadOptions } from "./upload.js"
import { waitForJob, type WaitOptions } from "./waitForJob.js"

export type ClientOptions = TransportOptions

/**
 * A version 4 UUID: `crypto.randomUUID` where it exists; browsers leave it out of pages served
 * over plain http (not a secure context), where `getRandomValues` still is.
 */
const uuid = (): string => {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID()
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export interface SubmitOptions {
  /** A version id; the latest stable one when not given. */
  readonly version?: string | undefined
  /** An https URL the engine POSTs the finished job to (see docs/webhooks.md). */
  readonly webhookUrl?: string | undefined
  /** Default: a fresh UUID per call, kept across the call's retries, so a retry never charges twice. */
  readonly idempotencyKey?: string | undefined
  readonly signal?: AbortSignal | undefined
}

export type RunOptions = SubmitOptions & WaitOptions

export interface ListParams {
  /** 1 to 100; 20 when not given. */
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly status?: JobStatus | undefined
  /** A model slug. */
  readonly modelId?: string | undefined
  readonly signal?: AbortSignal | undefined
}

export interface LogParams {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly signal?: AbortSignal | undefined
}

export interface ChangeParams {
  /** A cursor (a page's `nextCursor`, an entry's `cursor`): entries after it; from the oldest kept when not given. */
  readonly after?: string | undefined
  /** Entries per page, 1 to 100; 20 when not given. */
  readonly limit?: number | undefined
  readonly signal?: AbortSignal | undefined
}

export interface GenjobsClient {
  /** Charges and queues a job; the answer says `pending`. */
  readonly submit: (model: string, input: JobInput, options?: SubmitOptions) => Promise<Submitted>
  readonly get: (jobId: string, options?: { readonly signal?: AbortSignal | undefined }) => Promise<Job>
  /** Resolves with the job once completed, failed or cancelled, whichever it is. */
  readonly wait: (jobId: string, options?: WaitOptions) => Promise<Job>
  /** Submits and resolves with the completed job; rejects with JobFailedError when it fails or is cancelled. */
  readonly run: (model: string, input: JobInput, options?: RunOptions) => Promise<Job>
  /** `run` that reports each status change (pending, processing, ...) to `onUpdate`. */
  readonly subscribe: (model: string, input: JobInput, options: RunOptions & { readonly onUpdate: (job: Job) => void }) => Promise<Job>
  readonly cancel: (jobId: string) => Promise<Cancelled>
  /** One page of the job's provider log, oldest first; pass `nextCursor` back to go on (also to follow a running job). */
  readonly logs: (jobId: string, params?: LogParams) => Promise<JobLogPage>
  readonly estimate: (model: string, input?: JobInput, options?: { readonly version?: string | undefined }) => Promise<CostEstimate>
  /** One page of jobs, newest first. */
  readonly list: (params?: ListParams) => Promise<JobPage>
  /** Every job, newest first, fetching pages as the loop goes on. */
  readonly jobs: (params?: Omit<ListParams, "cursor">) => AsyncIterable<JobSummary>
  /** One page of the changes feed: the account's job endings after `after`, oldest first. */
  readonly changesPage: (params?: ChangeParams) => Promise<ChangePage>
  /**
   * Every job ending after `after`, oldest first, fetching pages as the loop goes on; ends once
   * the feed is read up. Store the last handled entry's `cursor` and pass it as `after` next
   * time: each ending is seen exactly once (docs/webhooks.md, "Catching up after downtime").
   */
  readonly changes: (params?: Omit<ChangeParams, "limit"> & { readonly pageSize?: number | undefined }) => AsyncIterable<Change>
  readonly models: () => Promise<Models>
  /** A model with its versions, by slug (provider/model/capability). */
  readonly model: (slug: string) => Promise<Model>
  /** The key's account (balance, limits, jobs in flight) and the key itself. */
  readonly account: () => Promise<AccountOverview>
  /** Uploads an input file; put its `fileUrl` in a job's input. */
  readonly upload: (file: UploadBody, options: UploadOptions) => Promise<Upload>
}

/** A Promise client of the engine's API over fetch: Node 22+, browsers, Deno, Bun, workers. */
export const createClient = (options: ClientOptions): GenjobsClient => {
  const transport = makeTransport(options)
  const support = { events: true }

  const submit: GenjobsClient["submit"] = (model, input, submitOptions = {}) =>
    transport.json({
      method: "POST",
      path: "/v1/jobs/submit",
      json: { model, input, version: submitOptions.version, webhookUrl: submitOptions.webhookUrl },
      headers: { "idempotency-key": submitOptions.idempotencyKey ?? uuid() },
      retry: true,
      signal: submitOptions.signal
    })

  const wait: GenjobsClient["wait"] = (jobId, waitOptions) => waitForJob(transport, jobId, support, waitOptions)

  const run: GenjobsClient["run"] = async (model, input, runOptions = {}) => {
    const { jobId } = await submit(model, input, runOptions)
    const job = await wait(jobId, runOptions)
    if (job.status !== "completed") throw new JobFailedError(job)
    return job
  }

  const list: GenjobsClient["list"] = (params = {}) =>
    transport.json({
      method: "GET",
      path: "/v1/jobs",
      query: { limit: params.limit, cursor: params.cursor, status: params.status, modelId: params.modelId },
      retry: true,
      signal: params.signal
    })

  const changesPage: GenjobsClient["changesPage"] = (params = {}) =>
    transport.json({ method: "GET", path: "/v1/changes", query: { after: params.after, limit: params.limit }, retry: true, signal: params.signal })

  return {
    submit,
    logs: (jobId, params = {}) =>
      transport.json({
        method: "GET",
        path: `/v1/jobs/${encodeURIComponent(jobId)}/logs`,
        query: { limit: params.limit, cursor: params.cursor },
        retry: true,
        signal: params.signal
      }),
    get: (jobId, getOptions = {}) =>
      transport.json({ method: "GET", path: `/v1/jobs/${encodeURIComponent(jobId)}`, retry: true, signal: getOptions.signal }),
    wait,
    run,
    subscribe: run,
    // A repeated cancel is harmless: a second one answers JOB_CANNOT_BE_CANCELLED and refunds nothing.
    cancel: (jobId) => transport.json({ method: "POST", path: `/v1/jobs/${encodeURIComponent(jobId)}/cancel`, retry: true }),
    estimate: (model, input, estimateOptions = {}) =>
      transport.json({ method: "POST", path: "/v1/jobs/estimate", json: { model, input, version: estimateOptions.version }, retry: true }),
    list,
    jobs: async function*(params = {}) {
      let cursor: string | undefined
      do {
        const page = await list({ ...params, cursor })
        yield* page.jobs
        cursor = page.hasMore && page.nextCursor !== null ? page.nextCursor : undefined
      } while (cursor !== undefined)
    },
    changesPage,
    changes: async function*(params = {}) {
      let after = params.after
      for (;;) {
        const page = await changesPage({ after, limit: params.pageSize ?? 100, signal: params.signal })
        yield* page.changes
        after = page.nextCursor
        if (!page.hasMore) return
      }
    },
    models: () => transport.json({ method: "GET", path: "/v1/models", retry: true }),
    // The documented route: the slug is one path parameter, its slashes percent-encoded.
    model: (slug) => transport.json({ method: "GET", path: `/v1/models/${encodeURIComponent(slug)}`, retry: true }),
    account: () => transport.json({ method: "GET", path: "/v1/account", retry: true }),
    upload: (file, uploadOptions) => uploadFile(transport, file, uploadOptions)
  }
}
