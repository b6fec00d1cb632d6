import { Redacted } from "effect"
import type { GenerationProvider } from "../../../src/ports/Provider.js"
import { runwayApi } from "./api.js"
import { createTask, deleteTask, retrieveTask, type TasksApi } from "./tasks.js"

export const RUNWAY_BASE_URL = "https://api.dev.runwayml.com"
export const RUNWAY_API_VERSION = "2024-11-06"

export interface RunwayProviderOptions {
  readonly apiSecret: Redacted.Redacted<string> | string
  /** The API root, without /v1: default https://api.dev.runwayml.com. */
  readonly baseUrl?: string
  /** Sent as X-Runway-Version: default 2024-11-06. */
  readonly apiVersion?: string
  /** The longest wait for one answer: default 60 s. */
  readonly timeoutMs?: number
  /** Between polls: default 5 s (Runway updates a task no more often). */
  readonly pollIntervalMs?: number
}

/**
 * Runway as a generation provider: every generation is a task, created at the endpoint the
 * catalog's model names, polled at /v1/tasks/{id}, cancelled by deleting it. No request is retried
 * here: the engine retries what comes back retryable.
 */
export const runwayProvider = (options: RunwayProviderOptions): GenerationProvider => {
  const apiSecret = typeof options.apiSecret === "string" ? options.apiSecret : Redacted.value(options.apiSecret)
  const tasks: TasksApi = {
    api: runwayApi(apiSecret),
    baseUrl: (options.baseUrl ?? RUNWAY_BASE_URL).replace(/\/+$/, ""),
    headers: { authorization: `Bearer ${apiSecret}`, "x-runway-version": options.apiVersion ?? RUNWAY_API_VERSION },
    timeoutMs: options.timeoutMs ?? 60_000
  }
  return {
    start: (request) => createTask(tasks, request),
    poll: (handle, request) => retrieveTask(tasks, handle, request),
    cancel: (handle) => deleteTask(tasks, handle),
    pollIntervalMs: options.pollIntervalMs ?? 5_000
  }
}
