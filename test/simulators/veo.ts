/**
 * A local Gemini API for Veo, written from Google's Veo and long-running operation docs: `POST
 * /v1beta/models/{model}:predictLongRunning` answers an operation (`models/{model}/operations/{id}`),
 * `GET /v1beta/{operation name}` answers it with `done` once `durationMs` has passed, then the
 * video as a file URI (`response.generateVideoResponse.generatedSamples[].video.uri`) that `GET
 * /v1beta/files/{id}:download?alt=media` streams. Every call needs `x-goog-api-key`; errors are
 * Google's `{ error: { code, message, status } }`, a wrong key a 400 INVALID_ARGUMENT as Google
 * answers it. Faults on demand (429 with Retry-After, 5xx, malformed or slow answers).
 *
 * A prompt with "[fail]" ends the operation with an `error` (code 3); "[deadline]" with code 4 (DEADLINE_EXCEEDED); "[filtered]" ends it with every
 * sample removed by the safety filters; "[reject]" is refused at the start (400). Tests and the
 * dev server only: production code never imports this.
 */
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import {
  type InFlight,
  isObject,
  listen,
  readJson,
  sendJson,
  simulatorCore,
  type SimulatorControls,
  type SimulatorOptions,
  streamBytes,
  TINY_MP4
} from "./core.js"

/** `durationMs` is how long an operation runs: default 2 s. */
export interface VeoSimulatorOptions extends SimulatorOptions {
  /** The key the simulator accepts: default "gemini-simulator-key". */
  readonly apiKey?: string | undefined
  /** Size of a generated video: default 256 KiB. */
  readonly videoBytes?: number | undefined
}

/** Counters: `starts` accepted operations, `polls` operation reads, `downloads` video files. */
export interface VeoSimulator extends SimulatorControls {
  /** The API root without /v1beta, as GEMINI_BASE_URL takes it. */
  readonly url: string
  readonly apiKey: string
  /** Every predictLongRunning request, oldest first: the model and the body. */
  readonly requests: ReadonlyArray<{ readonly model: string; readonly body: Record<string, unknown> }>
}

interface VideoOperation {
  readonly name: string
  readonly fileId: string
  readonly createdAt: number
  readonly outcome: "video" | "error" | "deadline" | "filtered"
  readonly run: InFlight
}

const STATUS_OF: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  429: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED"
}

const errorBody = (message: string, code: number) => ({ error: { code, message, status: STATUS_OF[code] ?? "UNKNOWN" } })

const fail = (res: ServerResponse, code: number, message: string) => sendJson(res, code, errorBody(message, code))

export const startVeoSimulator = async (options: VeoSimulatorOptions = {}): Promise<VeoSimulator> => {
  const apiKey = options.apiKey ?? "gemini-simulator-key"
  const durationMs = options.durationMs ?? 2_000
  const requests: Array<{ model: string; body: Record<string, unknown> }> = []
  const operations = new Map<string, VideoOperation>()
  const core = simulatorCore({ errorBody, markerField: options.markerField ?? "prompt" })
  const { counters } = core

  const operationView = (operation: VideoOperation, origin: string) => {
    if (Date.now() - operation.createdAt < durationMs) return { name: operation.name }
    switch (operation.outcome) {
      case "error":
        return { name: operation.name, done: true, error: { code: 3, message: "The prompt could not be rendered into a video." } }
      case "deadline":
        return { name: operation.name, done: true, error: { code: 4, message: "The operation did not finish in time." } }
      case "filtered":
        return {
          name: operation.name,
          done: true,
          response: {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
            generateVideoResponse: {
              raiMediaFilteredCount: 1,
              raiMediaFilteredReasons: ["The video was filtered because it may violate the usage guidelines."]
            }
          }
        }
      case "video":
        return {
          name: operation.name,
          done: true,
          response: {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse",
            generateVideoResponse: {
              generatedSamples: [{ video: { uri: `${origin}/v1beta/files/${operation.fileId}:download?alt=media` } }]
            }
          }
        }
    }
  }

  const predict = async (model: string, req: IncomingMessage, res: ServerResponse) => {
    const body = await readJson(req)
    if (!isObject(body)) return fail(res, 400, "Invalid JSON payload received.")
    requests.push({ model, body })
    if (!/^veo-/.test(model)) return fail(res, 404, `models/${model} is not found for API version v1beta, or is not supported for predictLongRunning.`)
    const instance = Array.isArray(body["instances"]) && isObject(body["instances"][0]) ? body["instances"][0] : undefined
    const prompt = instance?.["prompt"]
    if (typeof prompt !== "string" || prompt === "") return fail(res, 400, "* PredictLongRunningRequest.instances[0].prompt: a prompt is required")
    if (prompt.includes("[reject]")) return fail(res, 400, "The prompt was blocked by the safety filters.")
    const operation: VideoOperation = {
      name: `models/${model}/operations/${randomUUID().replaceAll("-", "")}`,
      fileId: randomUUID().replaceAll("-", ""),
      createdAt: Date.now(),
      outcome: prompt.includes("[fail]") ? "error" : prompt.includes("[deadline]") ? "deadline" : prompt.includes("[filtered]") ? "filtered" : "video",
      run: core.started(instance!)
    }
    operations.set(operation.name, operation)
    core.timers.after(durationMs, operation.run.end)
    sendJson(res, 200, { name: operation.name })
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, origin: string) => {
    const path = new URL(req.url ?? "/", origin).pathname
    const predictModel = /^\/v1beta\/models\/([^/:]+):predictLongRunning$/.exec(path)?.[1]
    const fileId = /^\/v1beta\/files\/([^/:]+):download$/.exec(path)?.[1]
    const operationName = /^\/v1beta\/(models\/[^/]+\/operations\/[^/]+)$/.exec(path)?.[1]
    const operation = req.method === "POST" && predictModel !== undefined
      ? "start"
      : fileId !== undefined
      ? "download"
      : operationName !== undefined
      ? "poll"
      : "other"
    if (await core.intercept(operation, res)) return
    const given = req.headers["x-goog-api-key"]
    if (given !== apiKey) {
      // Google does not quote the key back; this simulator does, so that tests prove adapters never repeat it.
      return fail(res, 400, `API key not valid. Please pass a valid API key. (got ${String(given ?? "none")})`)
    }
    if (predictModel !== undefined && req.method === "POST") return predict(predictModel, req, res)
    if (operationName !== undefined && req.method === "GET") {
      const found = operations.get(operationName)
      if (found === undefined) return fail(res, 404, `Operation ${operationName} not found.`)
      counters.polls++
      return sendJson(res, 200, operationView(found, origin))
    }
    if (fileId !== undefined && req.method === "GET") {
      const found = [...operations.values()].find((candidate) => candidate.fileId === fileId && candidate.outcome === "video")
      if (found === undefined || Date.now() - found.createdAt < durationMs) return fail(res, 404, `File ${fileId} not found.`)
      counters.downloads++
      return streamBytes(res, "video/mp4", TINY_MP4, options.videoBytes ?? 256 * 1024)
    }
    fail(res, 404, `Method not found: ${req.method} ${path}`)
  }

  const listening = await listen(options.port ?? 0, handle)
  return { ...core.controls(listening), apiKey, requests }
}
