/**
 * A local OpenRouter video API, written from OpenRouter's video generation guide and API
 * reference: `POST /api/v1/videos` answers `{ id, polling_url, status: "pending" }`, `GET
 * /api/v1/videos/{jobId}` goes pending -> in_progress -> completed | failed over `durationMs`, a
 * completed job lists `unsigned_urls` that `GET /api/v1/videos/{jobId}/content?index=N` streams
 * with the key. A submit with `callback_url` gets a `video.generation.{completed,failed}` event
 * there, signed `X-OpenRouter-Signature: t=<seconds>,v1=<hex HMAC-SHA256 over "t,body">` with
 * the workspace secret, deduplicated by `X-OpenRouter-Idempotency-Key: <job id>-<status>`.
 * Bearer auth, OpenRouter's `{ error: { code, message } }` bodies, and faults on demand.
 *
 * A prompt with "[fail]" makes the job fail; "[reject]" is refused by moderation (403). Tests and
 * the dev server only: production code never imports this.
 */
import { createHmac, randomBytes, randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import {
  bearerOf,
  deliver,
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

/** `durationMs` is how long a job runs: default 2 s. */
export interface OpenRouterSimulatorOptions extends SimulatorOptions {
  /** The key the simulator accepts: default "sk-or-v1-simulator". */
  readonly apiKey?: string | undefined
  /** The workspace's webhook signing secret: default a fresh random one. */
  readonly webhookSecret?: string | undefined
  /** Size of a generated video: default 256 KiB. */
  readonly videoBytes?: number | undefined
}

/** Counters: `starts` accepted jobs, `polls` status reads, `downloads` content fetched, `callbacks` the webhooks sent. */
export interface OpenRouterSimulator extends SimulatorControls {
  /** The API root with its version, as OPENROUTER_BASE_URL takes it: http://127.0.0.1:port/api/v1 */
  readonly url: string
  readonly apiKey: string
  readonly webhookSecret: string
  /** Every submit body, oldest first. */
  readonly bodies: ReadonlyArray<Record<string, unknown>>
}

interface VideoJob {
  readonly id: string
  readonly model: string
  readonly createdAt: number
  readonly fails: boolean
  readonly callbackUrl: string | undefined
  readonly run: InFlight
}

/** The signature header of a delivery, as OpenRouter signs it (a test signs its own deliveries with this). */
export const signOpenRouterWebhook = (
  body: string,
  secret: string,
  options: { readonly timestampSeconds?: number } = {}
): Record<string, string> => {
  const timestamp = String(options.timestampSeconds ?? Math.floor(Date.now() / 1000))
  const signature = createHmac("sha256", secret).update(`${timestamp},${body}`).digest("hex")
  return { "x-openrouter-signature": `t=${timestamp},v1=${signature}` }
}

const errorBody = (message: string, code: number) => ({ error: { code, message } })

const fail = (res: ServerResponse, code: number, message: string) => sendJson(res, code, errorBody(message, code))

export const startOpenRouterSimulator = async (options: OpenRouterSimulatorOptions = {}): Promise<OpenRouterSimulator> => {
  const apiKey = options.apiKey ?? "sk-or-v1-simulator"
  const webhookSecret = options.webhookSecret ?? randomBytes(24).toString("hex")
  const durationMs = options.durationMs ?? 2_000
  const bodies: Array<Record<string, unknown>> = []
  const jobs = new Map<string, VideoJob>()
  const core = simulatorCore({ errorBody, markerField: options.markerField ?? "prompt" })
  const { counters } = core

  const statusOf = (job: VideoJob, now: number) => {
    const elapsed = now - job.createdAt
    if (elapsed < durationMs / 10) return "pending"
    if (elapsed < durationMs) return "in_progress"
    return job.fails ? "failed" : "completed"
  }

  const jobView = (job: VideoJob, origin: string, now = Date.now()) => {
    const status = statusOf(job, now)
    return {
      id: job.id,
      polling_url: `/api/v1/videos/${job.id}`,
      status,
      ...(status === "completed"
        ? {
          generation_id: `gen-${job.id}`,
          unsigned_urls: [`${origin}/api/v1/videos/${job.id}/content?index=0`],
          usage: { cost: 0.4, is_byok: false }
        }
        : {}),
      ...(status === "failed" ? { error: "The upstream provider could not render this prompt." } : {})
    }
  }

  /** When a job ends: no longer in flight, and its signed event goes to its callback URL. */
  const finish = (job: VideoJob, origin: string) => {
    if (!job.run.end() || job.callbackUrl === undefined) return
    // As of the job's end: a timer may fire a millisecond before Date.now() says it is due.
    const data = jobView(job, origin, job.createdAt + durationMs)
    const body = JSON.stringify({ type: `video.generation.${data.status}`, created_at: new Date().toISOString(), data })
    void deliver(counters, job.callbackUrl, body, {
      ...signOpenRouterWebhook(body, webhookSecret),
      "x-openrouter-idempotency-key": `${job.id}-${data.status}`
    })
  }

  const submit = async (req: IncomingMessage, res: ServerResponse, origin: string) => {
    const body = await readJson(req)
    if (!isObject(body)) return fail(res, 400, "Request body must be JSON")
    bodies.push(body)
    const { model, prompt, callback_url: callbackUrl } = body
    if (typeof model !== "string" || !model.includes("/")) return fail(res, 400, `Invalid model: ${String(model)}`)
    if (typeof prompt !== "string" || prompt === "") return fail(res, 400, "prompt is required")
    if (callbackUrl !== undefined && (typeof callbackUrl !== "string" || !URL.canParse(callbackUrl))) {
      return fail(res, 400, "callback_url must be a URL")
    }
    if (prompt.includes("[reject]")) {
      // A moderation refusal's metadata, as OpenRouter documents it.
      return sendJson(res, 403, {
        error: {
          code: 403,
          message: "Your input was flagged by moderation.",
          metadata: { reasons: ["violence"], flagged_input: prompt.slice(0, 100), provider_name: "simulated", model_slug: model }
        }
      })
    }
    const job: VideoJob = {
      id: `job-${randomUUID()}`,
      model,
      createdAt: Date.now(),
      fails: prompt.includes("[fail]"),
      callbackUrl,
      run: core.started(body)
    }
    jobs.set(job.id, job)
    core.timers.after(durationMs, () => finish(job, origin))
    sendJson(res, 202, jobView(job, origin))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, origin: string) => {
    const url = new URL(req.url ?? "/", origin)
    const match = /^\/api\/v1\/videos\/([^/]+)(\/content)?$/.exec(url.pathname)
    const operation = req.method === "POST" && url.pathname === "/api/v1/videos"
      ? "start"
      : match?.[2] !== undefined
      ? "download"
      : match !== null
      ? "poll"
      : "other"
    if (await core.intercept(operation, res)) return
    const given = bearerOf(req)
    if (given !== apiKey) {
      // OpenRouter does not quote the key back; this simulator does, so that tests prove adapters never repeat it.
      return fail(res, 401, given === undefined ? "No auth credentials found" : `User not found for key ${given}`)
    }
    if (operation === "start") return submit(req, res, origin)
    const job = match === null ? undefined : jobs.get(decodeURIComponent(match[1]!))
    if (match === null || req.method !== "GET") return fail(res, 404, `Not found: ${req.method} ${url.pathname}`)
    if (job === undefined) return fail(res, 404, "Video generation job not found")
    if (operation === "poll") {
      counters.polls++
      return sendJson(res, 200, jobView(job, origin))
    }
    if (statusOf(job, Date.now()) !== "completed") return fail(res, 409, "The video is not ready")
    if (url.searchParams.get("index") !== "0") return fail(res, 404, "No video at this index")
    counters.downloads++
    return streamBytes(res, "video/mp4", TINY_MP4, options.videoBytes ?? 256 * 1024)
  }

  const listening = await listen(options.port ?? 0, handle)
  return { ...core.controls(listening), url: `${listening.url}/api/v1`, apiKey, webhookSecret, bodies }
}
