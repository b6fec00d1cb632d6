/**
 * A Replicate simulator, written from Replicate's HTTP API documentation: predictions created
 * by version (POST /v1/predictions) or by model (POST /v1/models/{owner}/{name}/predictions),
 * read (GET /v1/predictions/{id}), listed newest first (GET /v1/predictions), cancelled (POST
 * /v1/predictions/{id}/cancel); statuses starting -> processing -> succeeded | failed | canceled
 * over `durationMs`; problem-details errors; webhooks signed the Standard Webhooks way
 * (GET /v1/webhooks/default/secret answers the secret). Outputs are URLs served by the simulator.
 */
import { createHmac, randomBytes } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import {
  deliver,
  fileNameOf,
  isObject,
  listenServingFiles,
  type ModelFileOptions,
  type ModelGeneration,
  modelSettings,
  randomId,
  readJson,
  sendJson,
  simulatorCore,
  type SimulatorControls,
  type SimulatorOptions,
  startModelGeneration
} from "./core.js"

export interface ReplicateSimulatorOptions extends SimulatorOptions, ModelFileOptions {
  /** The token requests must carry as `Authorization: Bearer ...`. Default "r8_simulator". */
  readonly apiToken?: string | undefined
  /** Other tokens it takes as well (several credentials of one account); `acceptOnly` narrows them later. */
  readonly otherTokens?: ReadonlyArray<string> | undefined
  /** Output files also need a token it takes, as files on Replicate's own API host do. Default false. */
  readonly filesNeedToken?: boolean | undefined
  /** The webhook signing secret. Default a fresh whsec_ secret. */
  readonly webhookSecret?: string | undefined
  /** Predictions per page of GET /v1/predictions. Default 100, as Replicate. */
  readonly pageSize?: number | undefined
}

export interface ReplicateSimulator extends SimulatorControls {
  readonly apiToken: string
  /** From now on, only these tokens are taken (API requests and, with `filesNeedToken`, files): any other answers 401. */
  readonly acceptOnly: (...tokens: ReadonlyArray<string>) => void
  readonly webhookSecret: string
  /** Every prediction created, oldest first, as the API would show it now. */
  readonly predictions: () => ReadonlyArray<Record<string, unknown>>
}

/** Standard Webhooks headers for a body, as Replicate sends them (a test signs its own deliveries with this). */
export const signReplicateWebhook = (
  body: string,
  secret: string,
  options: { readonly id?: string; readonly timestampSeconds?: number } = {}
): Record<string, string> => {
  const id = options.id ?? `msg_${randomId(24)}`
  const timestamp = String(options.timestampSeconds ?? Math.floor(Date.now() / 1000))
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64")
  const signature = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64")
  return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": `v1,${signature}` }
}

interface Generation extends ModelGeneration {
  readonly id: string
  readonly version: string | null
  readonly webhook: string | null
  readonly events: ReadonlyArray<string>
  canceledAt: number | undefined
}

const iso = (ms: number) => new Date(ms).toISOString()

const problem = (res: ServerResponse, status: number, title: string, detail: string, extra: Record<string, unknown> = {}) =>
  sendJson(res, status, { title, detail, status, ...extra }, { "content-type": "application/problem+json" })

/** Replicate's errors are problem details. */
const errorBody = (message: string, status: number) =>
  ({ title: status === 429 ? "Request was throttled." : "Simulated error", detail: message, status })

export const startReplicateSimulator = async (options: ReplicateSimulatorOptions = {}): Promise<ReplicateSimulator> => {
  const apiToken = options.apiToken ?? "r8_simulator"
  let accepted = new Set([apiToken, ...(options.otherTokens ?? [])])
  const authorized = (req: IncomingMessage) => accepted.has(/^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "")
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString("base64")}`
  const settings = modelSettings(options)
  const pageSize = options.pageSize ?? 100
  const core = simulatorCore({ errorBody, markerField: options.markerField ?? "prompt" })
  const generations: Array<Generation> = []
  let base = ""

  const statusOf = (g: Generation, now: number) => {
    if (g.canceledAt !== undefined) return "canceled"
    const elapsed = now - g.createdAt
    if (elapsed < g.durationMs * 0.2) return "starting"
    if (elapsed < g.durationMs) return "processing"
    return g.fail === undefined ? "succeeded" : "failed"
  }

  const outputOf = (g: Generation): unknown => {
    if (g.kind === "text") return ["Simulated", " answer", " to: ", String(g.input["prompt"] ?? "")]
    return [`${base}/files/${g.id}/${fileNameOf(g.kind)}`]
  }

  /**
   * A prediction's logs as Replicate answers them: all of its output so far, on every read. A
   * tqdm bar redraws its line with carriage returns and ends it with a newline once done, as
   * Cog models print; a line fetching weights shows a signed URL (its query must not be kept).
   */
  const logsOf = (percent: number, ended: boolean) => {
    const frames = Array.from({ length: Math.floor(percent / 10) + 1 }, (_, i) => `${String(i * 10).padStart(3)}%|${"#".repeat(i)}${" ".repeat(10 - i)}| ${i * 10}/100`)
    return "Using seed: 42\nDownloading weights from https://weights.replicate.test/sim/model.tar?X-Amz-Signature=simsignature&X-Amz-Credential=simkey\n" +
      frames.join("\r") + (ended ? "\nDone\n" : "")
  }

  const view = (g: Generation, now = Date.now()): Record<string, unknown> => {
    const status = statusOf(g, now)
    const terminal = status === "succeeded" || status === "failed" || status === "canceled"
    const percent = Math.min(100, Math.floor(((now - g.createdAt) / g.durationMs) * 100))
    return {
      id: g.id,
      model: g.model,
      version: g.version,
      input: g.input,
      logs: status === "starting" ? "" : logsOf(percent, terminal),
      output: status === "succeeded" ? outputOf(g) : null,
      data_removed: false,
      error: status === "failed" ? g.fail : null,
      status,
      source: "api",
      created_at: iso(g.createdAt),
      started_at: status === "starting" ? null : iso(g.createdAt + g.durationMs * 0.2),
      completed_at: terminal ? iso(g.canceledAt ?? g.createdAt + g.durationMs) : null,
      urls: { get: `${base}/v1/predictions/${g.id}`, cancel: `${base}/v1/predictions/${g.id}/cancel` },
      metrics: terminal ? { predict_time: g.durationMs / 1000 } : {},
      webhook: g.webhook,
      webhook_events_filter: g.events
    }
  }

  /** Once per prediction, when it ends: the in-flight count drops and the completed webhook goes out. */
  const finish = (g: Generation) => {
    if (!g.run.end()) return
    if (g.webhook !== null && g.events.includes("completed")) {
      const body = JSON.stringify(view(g))
      void deliver(core.counters, g.webhook, body, signReplicateWebhook(body, webhookSecret))
    }
  }

  const create = async (res: ServerResponse, body: unknown, model: string | undefined) => {
    if (!isObject(body)) return problem(res, 400, "Invalid request body", "The request body must be a JSON object.")
    const version = typeof body["version"] === "string" ? body["version"] : null
    if (model === undefined && version === null) {
      return problem(res, 422, "Input validation failed", "- version: version is required", {
        invalid_fields: [{ type: "required", field: "version", description: "version is required" }]
      })
    }
    if (!isObject(body["input"])) {
      return problem(res, 422, "Input validation failed", "- input: Input is required", {
        invalid_fields: [{ type: "required", field: "input", description: "Input is required" }]
      })
    }
    const input = body["input"]
    const webhook = typeof body["webhook"] === "string" ? body["webhook"] : null
    const events = Array.isArray(body["webhook_events_filter"]) ? body["webhook_events_filter"].map(String) : ["start", "output", "logs", "completed"]
    const modelName = model ?? `simulated/${version!.slice(0, 8)}`
    const g: Generation = {
      ...startModelGeneration(core, settings, modelName, input, () => finish(g)),
      id: randomId(),
      version,
      webhook,
      events,
      canceledAt: undefined
    }
    generations.push(g)
    sendJson(res, 201, view(g))
  }

  const find = (id: string) => generations.find((g) => g.id === id)

  const api = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const { pathname: path, searchParams: query } = url
    const method = req.method ?? "GET"
    const byModel = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path)
    const byId = /^\/v1\/predictions\/([^/]+)(\/cancel)?$/.exec(path)
    const operation = method === "POST" && (path === "/v1/predictions" || byModel !== null)
      ? "start"
      : byId !== null && byId[2] !== undefined
      ? "cancel"
      : byId !== null
      ? "poll"
      : path === "/v1/predictions"
      ? "list"
      : "other"
    if (await core.intercept(operation, res)) return
    if (!authorized(req)) {
      return problem(res, 401, "Unauthenticated", "You did not pass a valid authentication token")
    }
    if (operation === "start") return create(res, await readJson(req), byModel === null ? undefined : `${byModel[1]}/${byModel[2]}`)
    if (method === "GET" && path === "/v1/webhooks/default/secret") return sendJson(res, 200, { key: webhookSecret })
    if (method === "GET" && operation === "list") {
      const offset = Number(query.get("cursor") ?? "0")
      const newestFirst = [...generations].reverse()
      const page = newestFirst.slice(offset, offset + pageSize)
      const next = offset + pageSize < newestFirst.length ? `${base}/v1/predictions?cursor=${offset + pageSize}` : null
      return sendJson(res, 200, { next, previous: null, results: page.map((g) => view(g)) })
    }
    const g = byId === null ? undefined : find(byId[1]!)
    if (byId !== null && g === undefined) return problem(res, 404, "Not found", "Not found.")
    if (g !== undefined && operation === "poll" && method === "GET") {
      core.counters.polls++
      return sendJson(res, 200, view(g))
    }
    if (g !== undefined && operation === "cancel" && method === "POST") {
      core.counters.cancels++
      const status = statusOf(g, Date.now())
      if (status === "starting" || status === "processing") {
        g.canceledAt = Date.now()
        finish(g)
      }
      return sendJson(res, 200, view(g))
    }
    problem(res, 404, "Not found", "Not found.")
  }

  const listening = await listenServingFiles({
    port: options.port ?? 0,
    largeFileBytes: settings.largeFileBytes,
    counters: core.counters,
    connections: { keepAliveMs: options.keepAliveMs, idleCloseMs: options.idleCloseMs },
    ...(options.filesNeedToken === true ? { authorized } : {})
  }, api)
  base = listening.url

  return {
    ...core.controls(listening),
    apiToken,
    acceptOnly: (...tokens) => {
      accepted = new Set(tokens)
    },
    webhookSecret,
    predictions: () => generations.map((g) => view(g))
  }
}
