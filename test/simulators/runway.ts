/**
 * A local Runway, written from its API reference: POST /v1/{endpoint} (image_to_video,
 * text_to_video, text_to_image, ...) answers a task id; GET /v1/tasks/{id} goes THROTTLED (over
 * the organization's concurrency) -> PENDING -> RUNNING (progress 0..1) -> SUCCEEDED with output
 * URLs, or FAILED with failure and failureCode; DELETE /v1/tasks/{id} cancels or deletes it, after
 * which it is not found. Bearer auth, the X-Runway-Version header checked, `{ error }` bodies,
 * faults on demand (429 with Retry-After, 5xx, malformed or slow answers).
 *
 * A promptText containing "[fail]" makes the task fail its moderation (SAFETY.INPUT.TEXT); "[bad-output]" fails it
 * with INTERNAL.BAD_OUTPUT.CODE01. Tests and the dev server
 * only: production code never imports this.
 */
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import {
  bearerOf,
  type InFlight,
  isObject,
  listen,
  readJson,
  sendJson,
  simulatorCore,
  type SimulatorControls,
  type SimulatorOptions,
  streamBytes,
  TINY_MP4,
  TINY_PNG
} from "./core.js"

/** `durationMs` is how long a task runs once it has a slot: default 2 s. Starts are counted by `promptText`. */
export interface RunwaySimulatorOptions extends SimulatorOptions {
  /** The secret the simulator accepts: default "key_simulator_runway". */
  readonly apiSecret?: string | undefined
  /** Other secrets it takes as well (several keys of one organization); `acceptOnly` narrows them later. */
  readonly otherSecrets?: ReadonlyArray<string> | undefined
  /** Tasks running at once; the rest wait THROTTLED: default unlimited. */
  readonly concurrency?: number | undefined
  /** Size of a video output: default 256 KiB. */
  readonly videoBytes?: number | undefined
}

/** Counters: `starts` are tasks created (what Runway would charge for), `cancels` task deletions. */
export interface RunwaySimulator extends SimulatorControls {
  /** The API root, as RUNWAYML_BASE_URL takes it: http://127.0.0.1:port */
  readonly url: string
  readonly apiSecret: string
  /** From now on, only these secrets are taken: any other answers 401 (output files need none, as at Runway, whose output URLs are signed). */
  readonly acceptOnly: (...secrets: ReadonlyArray<string>) => void
  /** Every task creation as it arrived: the endpoint and its body, oldest first. */
  readonly creates: ReadonlyArray<{ readonly endpoint: string; readonly body: Record<string, unknown> }>
}

const VERSION = "2024-11-06"

/** Each endpoint, the fields it cannot do without, and what its tasks put out. */
const ENDPOINTS: Record<string, { readonly required: ReadonlyArray<ReadonlyArray<string>>; readonly output: "video" | "image" | "audio" }> = {
  image_to_video: { required: [["promptImage"], ["ratio"]], output: "video" },
  text_to_video: { required: [["promptText"]], output: "video" },
  video_to_video: { required: [["videoUri", "promptVideo"]], output: "video" },
  video_upscale: { required: [["videoUri"]], output: "video" },
  character_performance: { required: [["character"], ["reference"]], output: "video" },
  text_to_image: { required: [["promptText"], ["ratio"]], output: "image" },
  text_to_speech: { required: [["promptText"]], output: "audio" },
  sound_effect: { required: [["promptText"]], output: "audio" },
  speech_to_speech: { required: [["media"]], output: "audio" },
  voice_dubbing: { required: [["audioUri"]], output: "audio" },
  voice_isolation: { required: [["audioUri"]], output: "audio" }
}
const FILE_KINDS = {
  video: { extension: "mp4", contentType: "video/mp4" },
  image: { extension: "png", contentType: "image/png" },
  audio: { extension: "mp3", contentType: "audio/mpeg" }
} as const

interface Task {
  readonly id: string
  readonly output: "video" | "image" | "audio"
  readonly createdAt: number
  readonly fails: boolean
  /** "[bad-output]": the task fails with INTERNAL.BAD_OUTPUT, which a retry may get past. */
  readonly badOutput: boolean
  /** When it got a slot under the concurrency limit. */
  startedAt?: number
  readonly run: InFlight
}

export const startRunwaySimulator = async (options: RunwaySimulatorOptions = {}): Promise<RunwaySimulator> => {
  const apiSecret = options.apiSecret ?? "key_simulator_runway"
  let accepted = new Set([apiSecret, ...(options.otherSecrets ?? [])])
  const taskMs = options.durationMs ?? 2_000
  const concurrency = options.concurrency ?? Number.POSITIVE_INFINITY
  const creates: Array<{ endpoint: string; body: Record<string, unknown> }> = []
  const tasks = new Map<string, Task>()
  const core = simulatorCore({ errorBody: (message) => ({ error: message }), markerField: options.markerField ?? "promptText" })
  const { counters } = core

  const running = (task: Task, now: number) => task.startedAt !== undefined && now - task.startedAt < taskMs

  /** Gives waiting tasks the slots finished ones freed, oldest first. */
  const schedule = (now: number) => {
    let busy = [...tasks.values()].filter((task) => running(task, now)).length
    for (const task of tasks.values()) {
      if (busy >= concurrency) break
      if (task.startedAt === undefined) {
        task.startedAt = now
        core.timers.after(taskMs, task.run.end)
        busy++
      }
    }
  }

  const taskObject = (task: Task, origin: string) => {
    const now = Date.now()
    const base = { id: task.id, createdAt: new Date(task.createdAt).toISOString() }
    if (task.startedAt === undefined) return { ...base, status: "THROTTLED" }
    const elapsed = now - task.startedAt
    if (elapsed < taskMs / 10) return { ...base, status: "PENDING" }
    if (elapsed < taskMs) return { ...base, status: "RUNNING", progress: Math.round((elapsed / taskMs) * 100) / 100 }
    if (task.fails) {
      return { ...base, status: "FAILED", failure: "The prompt was flagged by content moderation.", failureCode: "SAFETY.INPUT.TEXT" }
    }
    if (task.badOutput) {
      return { ...base, status: "FAILED", failure: "The output did not pass quality checks.", failureCode: "INTERNAL.BAD_OUTPUT.CODE01" }
    }
    return { ...base, status: "SUCCEEDED", output: [`${origin}/files/${task.id}.${FILE_KINDS[task.output].extension}`] }
  }

  const create = async (endpoint: string, req: IncomingMessage, res: ServerResponse) => {
    const spec = ENDPOINTS[endpoint]!
    const fields = await readJson(req)
    if (!isObject(fields)) return sendJson(res, 400, { error: "Request body must be JSON." })
    creates.push({ endpoint, body: fields })
    const missing = [["model"], ...spec.required].filter((alternatives) => alternatives.every((field) => fields[field] === undefined))
    if (missing.length > 0) {
      return sendJson(res, 400, {
        error: "Validation of body failed",
        issues: missing.map((alternatives) => ({ message: `${alternatives.join(" or ")} is required`, path: [alternatives[0]] }))
      })
    }
    const task: Task = {
      id: randomUUID(),
      output: spec.output,
      createdAt: Date.now(),
      fails: String(fields["promptText"] ?? "").includes("[fail]"),
      badOutput: String(fields["promptText"] ?? "").includes("[bad-output]"),
      run: core.started(fields)
    }
    tasks.set(task.id, task)
    schedule(Date.now())
    sendJson(res, 200, { id: task.id })
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, origin: string) => {
    const path = new URL(req.url ?? "/", origin).pathname
    const file = /^\/files\/([0-9a-f-]+)\.(mp4|png|mp3)$/.exec(path)
    if (file !== null && req.method === "GET") {
      const task = tasks.get(file[1]!)
      if (task === undefined) return sendJson(res, 404, { error: "Not found" })
      counters.downloads++
      const kind = FILE_KINDS[task.output]
      return task.output === "image"
        ? streamBytes(res, kind.contentType, TINY_PNG, TINY_PNG.length)
        : streamBytes(res, kind.contentType, task.output === "video" ? TINY_MP4 : Buffer.from("ID3"), options.videoBytes ?? 256 * 1024)
    }
    const endpoint = /^\/v1\/([a-z_]+)$/.exec(path)?.[1]
    const taskId = /^\/v1\/tasks\/([^/]+)$/.exec(path)?.[1]
    const operation = req.method === "POST"
      ? "start"
      : taskId !== undefined && req.method === "GET"
      ? "poll"
      : taskId !== undefined && req.method === "DELETE"
      ? "cancel"
      : "other"
    if (await core.intercept(operation, res)) return
    if (!accepted.has(bearerOf(req) ?? "")) {
      // Runway does not quote the secret back; this simulator does, so that tests prove adapters never repeat it.
      return sendJson(res, 401, { error: `The provided API key is not valid: ${bearerOf(req) ?? "none given"}` })
    }
    const version = req.headers["x-runway-version"]
    if (version !== VERSION) {
      return sendJson(res, 400, { error: `X-Runway-Version must be ${VERSION}, got ${version === undefined ? "none" : String(version)}` })
    }
    if (endpoint !== undefined && ENDPOINTS[endpoint] !== undefined) {
      return req.method === "POST" ? create(endpoint, req, res) : sendJson(res, 405, { error: "Method not allowed" })
    }
    const task = taskId === undefined ? undefined : tasks.get(decodeURIComponent(taskId))
    if (taskId === undefined) return sendJson(res, 404, { error: "Not found" })
    if (task === undefined) return sendJson(res, 404, { error: "Task not found" })
    schedule(Date.now())
    if (req.method === "GET") {
      counters.polls++
      return sendJson(res, 200, taskObject(task, origin))
    }
    if (req.method === "DELETE") {
      counters.cancels++
      task.run.end()
      tasks.delete(task.id)
      res.writeHead(204).end()
      return
    }
    sendJson(res, 405, { error: "Method not allowed" })
  }

  const listening = await listen(options.port ?? 0, handle)
  return {
    ...core.controls(listening),
    apiSecret,
    acceptOnly: (...secrets) => {
      accepted = new Set(secrets)
    },
    creates
  }
}
