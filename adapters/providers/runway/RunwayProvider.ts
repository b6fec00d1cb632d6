import { Effect } from "effect"
import type { GenerationProvider, ProviderRequest } from "../../../src/ports/Provider.js"
import { type CredentialsOption, credentialSet } from "../credentials.js"
import { apiRoot, connectionPool } from "../providerHttp.js"
import { runwayApi } from "./api.js"
import { createTask, deleteTask, retrieveTask, type TasksApi } from "./tasks.js"

/** The provider id catalogs name for Runway models. */
export const RUNWAY_PROVIDER_ID = "runway"
export const RUNWAY_BASE_URL = "https://api.dev.runwayml.com"
export const RUNWAY_API_VERSION = "2024-11-06"

export interface RunwayOptions {
  /**
   * An API secret (key_...), or several (comma-separated, or a list of secrets or of `{ id?,
   * secret, weight? }`): each job keeps the one it started with. Sent only to `baseUrl`, never logged.
   */
  readonly apiSecret: CredentialsOption
  /** The API root, without /v1. Default https://api.dev.runwayml.com; a simulator's address in tests. */
  readonly baseUrl?: string | undefined
  /** Sent as X-Runway-Version. Default 2024-11-06. */
  readonly apiVersion?: string | undefined
  /** Between polls. Default 5 s (Runway updates a task no more often). */
  readonly pollIntervalMs?: number | undefined
  /** The longest wait for one answer of the API. Default 60 s. */
  readonly requestTimeoutMs?: number | undefined
  /**
   * Connections kept open to each host of the API, at most (default 64): requests beyond them
   * wait their turn, and that wait does not count against the request's timeout.
   */
  readonly maxConnections?: number | undefined
}

/**
 * Runway as a generation provider: every generation is a task, created at the endpoint the
 * catalog's model names, polled at /v1/tasks/{id}, cancelled by deleting it. No request is retried
 * here: the engine retries what comes back retryable.
 */
export const runwayProvider = (options: RunwayOptions): GenerationProvider => {
  const secrets = credentialSet("Runway", options.apiSecret)
  const api = { ...runwayApi(secrets.secrets), connections: connectionPool(options.maxConnections) }
  const baseUrl = apiRoot(options.baseUrl ?? RUNWAY_BASE_URL)
  const apiVersion = options.apiVersion ?? RUNWAY_API_VERSION
  const timeoutMs = options.requestTimeoutMs ?? 60_000
  /** The task calls with the secret of the job's credential. */
  const tasksFor = (request: ProviderRequest) =>
    Effect.map(secrets.secretFor(request.credentialId), (apiSecret): TasksApi => ({
      api,
      baseUrl,
      headers: { authorization: `Bearer ${apiSecret}`, "x-runway-version": apiVersion },
      timeoutMs
    }))
  return {
    pollIntervalMs: options.pollIntervalMs ?? 5_000,
    ...(secrets.credentials === undefined ? {} : { credentials: secrets.credentials }),
    logSecrets: secrets.secrets,
    start: (request) => Effect.flatMap(tasksFor(request), (tasks) => createTask(tasks, request)),
    poll: (handle, request) => Effect.flatMap(tasksFor(request), (tasks) => retrieveTask(tasks, handle, request)),
    cancel: (handle, request) => Effect.flatMap(tasksFor(request), (tasks) => deleteTask(tasks, handle))
  }
}
