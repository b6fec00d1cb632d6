import type { Redacted } from "effect"
import type { GenerationProvider } from "../../../src/ports/Provider.js"
import { apiRoot, secretValue } from "../providerHttp.js"
import { runwayApi } from "./api.js"
import { createTask, deleteTask, retrieveTask, type TasksApi } from "./tasks.js"

/** The provider id catalogs name for Runway models. */
export const RUNWAY_PROVIDER_ID = "runway"
export const RUNWAY_BASE_URL = "https://api.dev.runwayml.com"
export const RUNWAY_API_VERSION = "2024-11-06"

export interface RunwayOptions {
  /** An API secret (key_...). Sent only to `baseUrl`, never logged. */
  readonly apiSecret: string | Redacted.Redacted<string>
  /** The API root, without /v1. Default https://api.dev.runwayml.com; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /** Sent as X-Runway-Version. Default 2024-11-06. */
  readonly apiVersion?: string | undefined
  /** Between polls. Default 5 s (Runway updates a task no more often). */
  readonly pollIntervalMs?: number | undefined
  /** The longest wait for one answer of the API. Default 60 s. */
  readonly requestTimeoutMs?: number | undefined
}

/**
 * Runway as a generation provider: every generation is a task, created at the endpoint the
 * catalog's model names, polled at /v1/tasks/{id}, cancelled by deleting it. No request is retried
 * here: the engine retries what comes back retryable.
 */
export const runwayProvider = (options: RunwayOptions): GenerationProvider => {
  const apiSecret = secretValue(options.apiSecret)
  const tasks: TasksApi = {
    api: runwayApi(apiSecret),
    baseUrl: apiRoot(options.baseUrl ?? RUNWAY_BASE_URL),
    headers: { authorization: `Bearer ${apiSecret}`, "x-runway-version": options.apiVersion ?? RUNWAY_API_VERSION },
    timeoutMs: options.requestTimeoutMs ?? 60_000
  }
  return {
    pollIntervalMs: options.pollIntervalMs ?? 5_000,
    start: (request) => createTask(tasks, request),
    poll: (handle, request) => retrieveTask(tasks, handle, request),
    cancel: (handle) => deleteTask(tasks, handle)
  }
}
