import { Effect, Option, Schema } from "effect"
import { HttpClientRequest } from "effect/http"
import type { OutputType } from "../../../src/domain/job.js"
import {
  type ProviderError,
  type ProviderHandle,
  ProviderRejected,
  type ProviderRequest,
  type ProviderStatus,
  type StartOutcome
} from "../../../src/ports/Provider.js"
import { ignoringStatuses, type ProviderApi, send, sendJson } from "../providerHttp.js"
import { urlOutput } from "../providerOutputs.js"
import { isRunwayEndpoint, RUNWAY_CONTENT_TYPES, RUNWAY_ENDPOINTS, runwayTargetOf } from "./endpoints.js"

const Created = Schema.Struct({ id: Schema.String.check(Schema.isMinLength(1)) })

/** GET /v1/tasks/{id}: progress is 0 to 1; output URLs expire within a day or two. */
const Task = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["PENDING", "THROTTLED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]),
  progress: Schema.optional(Schema.NullOr(Schema.Number)),
  output: Schema.optional(Schema.NullOr(Schema.Array(Schema.String.check(Schema.isPattern(/^https?:\/\//))))),
  failure: Schema.optional(Schema.NullOr(Schema.String)),
  failureCode: Schema.optional(Schema.NullOr(Schema.String))
})
type Task = typeof Task.Type

/** Kept in the handle, so a catalog edited mid-generation does not change how the task is read. */
const HandleData = Schema.Struct({ endpoint: Schema.String })

export interface TasksApi {
  readonly api: ProviderApi
  readonly baseUrl: string
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
}

/** POST /v1/{endpoint} with the job's mapped input and the model: Runway answers the task id. */
export const createTask = (tasks: TasksApi, request: ProviderRequest): Effect.Effect<StartOutcome, ProviderError> => {
  const target = runwayTargetOf(request.providerModel, request.input)
  if (target === undefined) {
    return Effect.fail(new ProviderRejected({
      message: `Runway has no endpoint for "${request.providerModel}": name one as <endpoint>/<model>, e.g. image_to_video/gen4_turbo`,
      retryable: false
    }))
  }
  return sendJson(
    tasks.api,
    HttpClientRequest.post(`${tasks.baseUrl}/v1/${target.endpoint}`).pipe(
      HttpClientRequest.setHeaders(tasks.headers),
      HttpClientRequest.bodyJsonUnsafe({ ...request.input, model: target.model })
    ),
    Created,
    { timeoutMs: tasks.timeoutMs, isStart: true }
  ).pipe(Effect.map(({ id }): StartOutcome => ({ _tag: "Started", handle: { id, data: { endpoint: target.endpoint } } })))
}

const outputTypeOf = (handle: ProviderHandle, request: ProviderRequest): OutputType => {
  const kept = Option.getOrUndefined(Schema.decodeUnknownOption(HandleData)(handle.data))?.endpoint
  const endpoint = kept !== undefined && isRunwayEndpoint(kept)
    ? kept
    : runwayTargetOf(request.providerModel, request.input)?.endpoint ?? "text_to_video"
  return RUNWAY_ENDPOINTS[endpoint]
}

const statusOf = (task: Task, type: OutputType): ProviderStatus => {
  switch (task.status) {
    case "PENDING":
    case "THROTTLED":
      return { _tag: "Running" }
    case "RUNNING":
      return task.progress == null ? { _tag: "Running" } : { _tag: "Running", progress: Math.round(Math.min(1, Math.max(0, task.progress)) * 100) }
    case "CANCELLED":
      return { _tag: "Failed", message: "Runway cancelled the task", providerCode: "CANCELLED" }
    case "FAILED": {
      const code = task.failureCode == null ? "" : ` (${task.failureCode})`
      // failureCode: SAFETY.INPUT.*, SAFETY.OUTPUT.*, INTERNAL.BAD_OUTPUT.*, ASSET.INVALID, ... (Runway's task failures).
      return {
        _tag: "Failed",
        message: `Runway could not generate: ${task.failure ?? "no reason given"}${code}`,
        ...(task.failureCode == null ? {} : { providerCode: task.failureCode })
      }
    }
    case "SUCCEEDED":
      return task.output == null || task.output.length === 0
        ? { _tag: "Failed", message: "Runway finished the task without an output", outputInvalid: true }
        : {
          _tag: "Succeeded",
          outputs: task.output.map((url) => urlOutput(url, type, { contentType: RUNWAY_CONTENT_TYPES[type] }))
        }
  }
}

const taskUrl = (tasks: TasksApi, handle: ProviderHandle) => `${tasks.baseUrl}/v1/tasks/${encodeURIComponent(handle.id)}`

export const retrieveTask = (tasks: TasksApi, handle: ProviderHandle, request: ProviderRequest): Effect.Effect<ProviderStatus, ProviderError> =>
  sendJson(tasks.api, HttpClientRequest.get(taskUrl(tasks, handle)).pipe(HttpClientRequest.setHeaders(tasks.headers)), Task, { timeoutMs: tasks.timeoutMs }).pipe(
    Effect.map((task) => statusOf(task, outputTypeOf(handle, request)))
  )

/** DELETE /v1/tasks/{id} aborts a pending, throttled or running task; a task already gone (404) needs nothing more. */
export const deleteTask = (tasks: TasksApi, handle: ProviderHandle): Effect.Effect<void, ProviderError> =>
  send(tasks.api, HttpClientRequest.delete(taskUrl(tasks, handle)).pipe(HttpClientRequest.setHeaders(tasks.headers)), { timeoutMs: tasks.timeoutMs }).pipe(
    ignoringStatuses([404])
  )
