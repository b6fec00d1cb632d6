/**
 * A local OpenAI, written from the API reference: the Images API (POST /v1/images/generations,
 * answered at once with b64_json or a URL) and the Videos API (POST /v1/videos, GET
 * /v1/videos/{id} going queued -> in_progress -> completed|failed, GET /v1/videos/{id}/content
 * streamed, DELETE /v1/videos/{id} for finished videos). Bearer auth, OpenAI's error bodies,
 * and faults on demand (429 with Retry-After, 5xx, malformed or slow answers).
 *
 * A prompt containing "[fail]" makes a video fail; "[reject]" makes the safety system refuse it
 * (400). Tests and the dev server only: production code never imports this.
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

/** `durationMs` is how long a video takes from create to completed: default 2 s. */
export interface OpenAISimulatorOptions extends SimulatorOptions {
  /** The key the simulator accepts: default "sk-simulator-openai". */
  readonly apiKey?: string | undefined
  /** How long an image generation holds its request: default 0. */
  readonly imageMs?: number | undefined
  /** Size of a video's content: default 256 KiB. */
  readonly videoBytes?: number | undefined
}

/**
 * Counters: `starts` are accepted generations (images and videos), `polls` video retrievals,
 * `cancels` video deletions, `downloads` content (video, thumbnail, spritesheet) and image URLs.
 */
export interface OpenAISimulator extends SimulatorControls {
  /** The API root with its version, as OPENAI_BASE_URL takes it: http://127.0.0.1:port/v1 */
  readonly url: string
  readonly apiKey: string
  /** Every request body a create received, oldest first. */
  readonly bodies: ReadonlyArray<Record<string, unknown>>
}

interface VideoJob {
  readonly id: string
  readonly model: string
  readonly prompt: string
  readonly seconds: string
  readonly size: string
  readonly createdAt: number
  readonly fails: boolean
  readonly run: InFlight
}

const VIDEO_MODELS = new Set(["sora-2", "sora-2-pro"])
const SECONDS = new Set(["4", "8", "12"])
const SIZES = new Set(["720x1280", "1280x720", "1024x1792", "1792x1024"])
/** A RIFF WEBP header: enough for a content sniffer; the simulator does not draw thumbnails. */
const WEBP_HEAD = Buffer.from("RIFF\x24\x00\x00\x00WEBPVP8 ", "latin1")

const errorBody = (message: string, type = "invalid_request_error", code: string | null = null, param: string | null = null) => ({
  error: { message, type, param, code }
})

export const startOpenAISimulator = async (options: OpenAISimulatorOptions = {}): Promise<OpenAISimulator> => {
  const apiKey = options.apiKey ?? "sk-simulator-openai"
  const videoMs = options.durationMs ?? 2_000
  const bodies: Array<Record<string, unknown>> = []
  const videos = new Map<string, VideoJob>()
  const files = new Map<string, Uint8Array>()
  const core = simulatorCore({
    errorBody: (message, status) =>
      status === 429
        ? errorBody(message, "requests", "rate_limit_exceeded")
        : errorBody(message, status >= 500 ? "server_error" : "invalid_request_error"),
    markerField: options.markerField ?? "prompt"
  })
  const { counters } = core

  const videoObject = (video: VideoJob) => {
    const elapsed = Date.now() - video.createdAt
    const done = elapsed >= videoMs
    const status = done ? (video.fails ? "failed" : "completed") : elapsed < videoMs / 10 ? "queued" : "in_progress"
    return {
      id: video.id,
      object: "video",
      model: video.model,
      status,
      progress: done ? 100 : status === "queued" ? 0 : Math.floor((elapsed / videoMs) * 100),
      created_at: Math.floor(video.createdAt / 1000),
      completed_at: done ? Math.floor((video.createdAt + videoMs) / 1000) : null,
      expires_at: done ? Math.floor((video.createdAt + videoMs) / 1000) + 3600 : null,
      prompt: video.prompt,
      seconds: video.seconds,
      size: video.size,
      remixed_from_video_id: null,
      error: status === "failed" ? { code: "video_generation_failed", message: "The video could not be generated for this prompt." } : null
    }
  }

  const generateImages = async (body: Record<string, unknown>, res: ServerResponse, origin: string) => {
    const { model = "dall-e-2", prompt, n = 1, response_format: format, output_format: outputFormat } = body
    if (typeof prompt !== "string" || prompt === "") {
      return sendJson(res, 400, errorBody("Missing required parameter: 'prompt'.", "invalid_request_error", "missing_required_parameter", "prompt"))
    }
    if (typeof model !== "string" || !/^(gpt-image-|dall-e-)/.test(model)) {
      return sendJson(res, 400, errorBody(`Invalid value for 'model': '${String(model)}'.`, "invalid_request_error", "invalid_value", "model"))
    }
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1 || n > 10) {
      return sendJson(res, 400, errorBody("Invalid 'n': must be an integer from 1 to 10.", "invalid_request_error", "invalid_value", "n"))
    }
    if (outputFormat !== undefined && outputFormat !== "png") {
      return sendJson(res, 400, errorBody("The simulator draws png only.", "invalid_request_error", "invalid_value", "output_format"))
    }
    if (prompt.includes("[reject]")) {
      return sendJson(res, 400, errorBody("Your request was rejected as a result of our safety system.", "image_generation_user_error", "moderation_blocked"))
    }
    const run = core.started(body)
    await new Promise((resolve) => setTimeout(resolve, options.imageMs ?? 0))
    run.end()
    const inline = model.startsWith("gpt-image-") || format === "b64_json"
    const data = Array.from({ length: n }, () => {
      if (inline) return { b64_json: Buffer.from(TINY_PNG).toString("base64") }
      const id = randomUUID()
      files.set(`${id}.png`, TINY_PNG)
      return { url: `${origin}/files/${id}.png`, revised_prompt: `A picture of ${prompt}` }
    })
    sendJson(res, 200, { created: Math.floor(Date.now() / 1000), data, ...(model.startsWith("gpt-image-") ? { output_format: "png" } : {}) })
  }

  const createVideo = (body: Record<string, unknown>, res: ServerResponse) => {
    const { model = "sora-2", prompt, seconds = "4", size = "720x1280" } = body
    if (typeof prompt !== "string" || prompt === "") {
      return sendJson(res, 400, errorBody("Missing required parameter: 'prompt'.", "invalid_request_error", "missing_required_parameter", "prompt"))
    }
    if (typeof model !== "string" || !VIDEO_MODELS.has(model)) {
      return sendJson(res, 400, errorBody(`Invalid value for 'model': '${String(model)}'.`, "invalid_request_error", "invalid_value", "model"))
    }
    if (typeof seconds !== "string" || !SECONDS.has(seconds)) {
      return sendJson(res, 400, errorBody("Invalid value for 'seconds': expected one of '4', '8' or '12'.", "invalid_request_error", "invalid_value", "seconds"))
    }
    if (typeof size !== "string" || !SIZES.has(size)) {
      return sendJson(res, 400, errorBody(`Invalid value for 'size': '${String(size)}'.`, "invalid_request_error", "invalid_value", "size"))
    }
    if (prompt.includes("[reject]")) {
      return sendJson(res, 400, errorBody("Your request was blocked by our moderation system.", "invalid_request_error", "moderation_blocked"))
    }
    const video: VideoJob = {
      id: `video_${randomUUID().replaceAll("-", "")}`,
      model,
      prompt,
      seconds,
      size,
      createdAt: Date.now(),
      fails: prompt.includes("[fail]"),
      run: core.started(body)
    }
    videos.set(video.id, video)
    core.timers.after(videoMs, video.run.end)
    sendJson(res, 200, videoObject(video))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, origin: string) => {
    const url = new URL(req.url ?? "/", origin)
    const file = /^\/files\/([^/]+)$/.exec(url.pathname)
    if (file !== null && req.method === "GET") {
      const bytes = files.get(file[1]!)
      if (bytes === undefined) return sendJson(res, 404, errorBody("No such file"))
      counters.downloads++
      return streamBytes(res, "image/png", bytes, bytes.length)
    }
    const path = url.pathname
    const match = /^\/v1\/videos\/([^/]+)(\/content)?$/.exec(path)
    const operation = req.method === "POST"
      ? "start"
      : match?.[2] !== undefined
      ? "download"
      : match !== null && req.method === "GET"
      ? "poll"
      : match !== null && req.method === "DELETE"
      ? "cancel"
      : "other"
    if (await core.intercept(operation, res)) return
    if (bearerOf(req) !== apiKey) {
      const given = bearerOf(req)
      return sendJson(res, 401, errorBody(
        given === undefined
          ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth."
          // OpenAI masks the key it quotes; this simulator quotes it whole, so that tests prove adapters never repeat it.
          : `Incorrect API key provided: ${given}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        "invalid_request_error",
        "invalid_api_key"
      ))
    }
    if (req.method === "POST" && (path === "/v1/images/generations" || path === "/v1/videos")) {
      const body = await readJson(req)
      if (!isObject(body)) return sendJson(res, 400, errorBody("The simulator takes JSON bodies: send Content-Type: application/json."))
      bodies.push(body)
      return path === "/v1/videos" ? createVideo(body, res) : generateImages(body, res, origin)
    }
    const video = match === null ? undefined : videos.get(decodeURIComponent(match[1]!))
    if (match === null) return sendJson(res, 404, errorBody(`Invalid URL (${req.method} ${path})`))
    if (video === undefined) return sendJson(res, 404, errorBody(`Video with id '${match[1]}' not found.`, "invalid_request_error", "video_not_found"))
    const status = videoObject(video).status
    if (match[2] !== undefined && req.method === "GET") {
      if (status !== "completed") return sendJson(res, 404, errorBody("Video content is not available until the video is completed."))
      counters.downloads++
      const variant = url.searchParams.get("variant") ?? "video"
      if (variant === "thumbnail") return streamBytes(res, "image/webp", WEBP_HEAD, 256)
      if (variant === "spritesheet") return streamBytes(res, "image/jpeg", Buffer.from([0xff, 0xd8, 0xff]), 256)
      if (variant !== "video") return sendJson(res, 400, errorBody(`Invalid value for 'variant': '${variant}'.`, "invalid_request_error", "invalid_value", "variant"))
      return streamBytes(res, "video/mp4", TINY_MP4, options.videoBytes ?? 256 * 1024)
    }
    if (match[2] === undefined && req.method === "GET") {
      counters.polls++
      return sendJson(res, 200, videoObject(video))
    }
    if (match[2] === undefined && req.method === "DELETE") {
      if (status !== "completed" && status !== "failed") {
        return sendJson(res, 400, errorBody("Only completed or failed videos can be deleted.", "invalid_request_error", "invalid_state"))
      }
      counters.cancels++
      video.run.end()
      videos.delete(video.id)
      return sendJson(res, 200, { id: video.id, object: "video.deleted", deleted: true })
    }
    sendJson(res, 405, errorBody(`Method ${req.method} is not allowed here.`))
  }

  const listening = await listen(options.port ?? 0, handle)
  return {
    ...core.controls(listening),
    url: `${listening.url}/v1`,
    apiKey,
    bodies
  }
}
