/**
 * A local OpenAI, written from the API reference: the Images API (POST /v1/images/generations,
 * answered at once with b64_json or a URL). Bearer auth, OpenAI's error bodies, and faults on
 * demand (429 with Retry-After, 5xx, malformed or slow answers). OpenAI removed its Videos API
 * on 2026-09-24: like OpenAI now, the simulator has no /v1/videos.
 *
 * A prompt containing "[reject]" makes the safety system refuse it (400). Tests and the dev
 * server only: production code never imports this.
 */
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import {
  bearerOf,
  isObject,
  listen,
  readJson,
  sendJson,
  simulatorCore,
  type SimulatorControls,
  type SimulatorOptions,
  streamBytes,
  TINY_PNG
} from "./core.js"

export interface OpenAISimulatorOptions extends SimulatorOptions {
  /** The key the simulator accepts: default "sk-simulator-openai". */
  readonly apiKey?: string | undefined
  /** Other keys it takes as well (several keys of one organization); `acceptOnly` narrows them later. */
  readonly otherKeys?: ReadonlyArray<string> | undefined
  /** How long an image generation holds its request: default 0. */
  readonly imageMs?: number | undefined
}

/** Counters: `starts` are accepted image generations, `downloads` image URLs fetched. */
export interface OpenAISimulator extends SimulatorControls {
  /** The API root with its version, as OPENAI_BASE_URL takes it: http://127.0.0.1:port/v1 */
  readonly url: string
  readonly apiKey: string
  /** From now on, only these keys are taken: any other answers 401 (output files need none, as at OpenAI, whose image URLs are signed). */
  readonly acceptOnly: (...keys: ReadonlyArray<string>) => void
  /** Every request body a create received, oldest first. */
  readonly bodies: ReadonlyArray<Record<string, unknown>>
}

const errorBody = (message: string, type = "invalid_request_error", code: string | null = null, param: string | null = null) => ({
  error: { message, type, param, code }
})

export const startOpenAISimulator = async (options: OpenAISimulatorOptions = {}): Promise<OpenAISimulator> => {
  const apiKey = options.apiKey ?? "sk-simulator-openai"
  let accepted = new Set([apiKey, ...(options.otherKeys ?? [])])
  const bodies: Array<Record<string, unknown>> = []
  const files = new Map<string, Uint8Array>()
  const core = simulatorCore({
    errorBody: (message, status) =>
      status === 429
        ? errorBody(message, "requests", "rate_limit_exceeded")
        : errorBody(message, status >= 500 ? "server_error" : "invalid_request_error"),
    markerField: options.markerField ?? "prompt"
  })
  const { counters } = core

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
    if (await core.intercept(req.method === "POST" ? "start" : "other", res)) return
    if (!accepted.has(bearerOf(req) ?? "")) {
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
    if (req.method === "POST" && path === "/v1/images/generations") {
      const body = await readJson(req)
      if (!isObject(body)) return sendJson(res, 400, errorBody("The simulator takes JSON bodies: send Content-Type: application/json."))
      bodies.push(body)
      return generateImages(body, res, origin)
    }
    sendJson(res, 404, errorBody(`Invalid URL (${req.method} ${path})`))
  }

  const listening = await listen(options.port ?? 0, handle)
  return {
    ...core.controls(listening),
    url: `${listening.url}/v1`,
    apiKey,
    acceptOnly: (...keys) => {
      accepted = new Set(keys)
    },
    bodies
  }
}
