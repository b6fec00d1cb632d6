/**
 * A fal.ai queue simulator, written from fal.ai's queue and webhook documentation: POST
 * /{model}[/{subpath}] queues a request (with `fal_webhook` for a callback) and answers
 * request_id, status_url, response_url and cancel_url; GET .../requests/{id}/status moves
 * IN_QUEUE (with queue_position) -> IN_PROGRESS -> COMPLETED over `durationMs`; GET
 * .../requests/{id} answers the model's result (images, video, audio_file or text) or its error;
 * PUT .../requests/{id}/cancel; `Authorization: Key ...`. Webhooks are signed with ED25519 over
 * "{request id}\n{user id}\n{timestamp}\n{sha256 hex of body}" by a key pair of the simulator.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomUUID, sign } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import {
  contentTypeOf,
  deliver,
  fileNameOf,
  isObject,
  listenServingFiles,
  type ModelFileOptions,
  type ModelGeneration,
  modelSettings,
  readJson,
  sendJson,
  simulatorCore,
  type SimulatorControls,
  type SimulatorOptions,
  startModelGeneration
} from "./core.js"

export interface FalSimulatorOptions extends SimulatorOptions, ModelFileOptions {
  /** The key requests must carry as `Authorization: Key ...`. Default "fal-simulator-key". */
  readonly apiKey?: string | undefined
  /** Other keys it takes as well (several keys of one account); `acceptOnly` narrows them later. */
  readonly otherKeys?: ReadonlyArray<string> | undefined
}

export interface FalSimulator extends SimulatorControls {
  readonly apiKey: string
  /** From now on, only these keys are taken: any other answers 401 (output files need none, as at fal.ai, whose result files are on its public CDN). */
  readonly acceptOnly: (...keys: ReadonlyArray<string>) => void
  /** The webhook verification key as fal.ai publishes its keys: a JWKS document. */
  readonly publicKeysJwks: string
  /** The same key as base64 raw bytes. */
  readonly publicKeyBase64: string
  readonly privateKey: KeyObject
}

export const FAL_SIMULATOR_USER_ID = "simulated-user"

/** fal.ai's webhook headers for a body, signed with `privateKey` (a test signs its own deliveries with this). */
export const signFalWebhook = (
  body: string,
  privateKey: KeyObject,
  requestId: string,
  options: { readonly timestampSeconds?: number; readonly userId?: string } = {}
): Record<string, string> => {
  const timestamp = String(options.timestampSeconds ?? Math.floor(Date.now() / 1000))
  const userId = options.userId ?? FAL_SIMULATOR_USER_ID
  const digest = createHash("sha256").update(body).digest("hex")
  const signature = sign(null, Buffer.from([requestId, userId, timestamp, digest].join("\n")), privateKey).toString("hex")
  return {
    "x-fal-webhook-request-id": requestId,
    "x-fal-webhook-user-id": userId,
    "x-fal-webhook-timestamp": timestamp,
    "x-fal-webhook-signature": signature
  }
}

interface Request extends ModelGeneration {
  readonly id: string
  readonly app: string
  readonly webhook: string | null
  canceled: boolean
}

const QUEUED_SHARE = 0.3

export const startFalSimulator = async (options: FalSimulatorOptions = {}): Promise<FalSimulator> => {
  const apiKey = options.apiKey ?? "fal-simulator-key"
  let accepted = new Set([apiKey, ...(options.otherKeys ?? [])])
  const settings = modelSettings(options)
  const { privateKey, publicKey } = generateKeyPairSync("ed25519")
  const jwk = publicKey.export({ format: "jwk" })
  const core = simulatorCore({ errorBody: (message) => ({ detail: message }), markerField: options.markerField ?? "prompt" })
  const requests: Array<Request> = []
  let base = ""

  /**
   * A running request's logs as fal answers them with `?logs=1`: every line so far, oldest first,
   * each with its level, source and timestamp; one more line per fifth of the run.
   */
  const logsOf = (r: Request, now: number) => {
    const lines = ["Loading model", "Model loaded", "Running inference", "Inference step 2 of 4", "Inference step 4 of 4"]
    const shown = Math.min(lines.length, 1 + Math.floor(((now - r.createdAt) / r.durationMs) * lines.length))
    return lines.slice(0, shown).map((message, i) => ({
      message,
      level: "INFO",
      source: "USER",
      timestamp: new Date(r.createdAt + i).toISOString()
    }))
  }

  const phaseOf = (r: Request, now: number) => {
    if (r.canceled) return "COMPLETED"
    const elapsed = now - r.createdAt
    if (elapsed < r.durationMs * QUEUED_SHARE) return "IN_QUEUE"
    return elapsed < r.durationMs ? "IN_PROGRESS" : "COMPLETED"
  }

  const urlsOf = (r: Request) => {
    const at = `${base}/${r.app}/requests/${r.id}`
    return { response_url: at, status_url: `${at}/status`, cancel_url: `${at}/cancel` }
  }

  /** The model's answer: [status, body] as GET response_url gives it once completed. */
  const resultOf = (r: Request): readonly [number, Record<string, unknown>] => {
    if (r.canceled) return [499, { detail: "The request was cancelled by the client", error_type: "client_cancelled" }]
    if (r.fail !== undefined) {
      // fal's model errors: `type` names the kind (content_policy_violation, image_too_small, ...; `sim_fail_code`).
      return [422, { detail: [{ loc: ["body", "prompt"], msg: r.fail, type: r.failCode ?? "value_error" }] }]
    }
    if (r.kind === "text") return [200, { output: `Simulated answer to: ${String(r.input["prompt"] ?? "")}` }]
    const file = { url: `${base}/files/${r.id}/${fileNameOf(r.kind)}`, content_type: contentTypeOf(r.kind), file_name: fileNameOf(r.kind) }
    switch (r.kind) {
      case "image":
        return [200, { images: [{ ...file, width: 1, height: 1 }], seed: 42, has_nsfw_concepts: [false], prompt: r.input["prompt"] ?? "" }]
      case "audio":
        return [200, { audio_file: file }]
      case "video":
      case "large":
        return [200, { video: file, seed: 42 }]
    }
  }

  /** Once per request, when it ends: the in-flight count drops and the webhook goes out. */
  const finish = (r: Request) => {
    if (!r.run.end()) return
    if (r.webhook === null) return
    const [status, payload] = resultOf(r)
    const ok = status === 200
    const body = JSON.stringify({
      request_id: r.id,
      gateway_request_id: r.id,
      status: ok ? "OK" : "ERROR",
      payload,
      ...(ok ? {} : { error: `Invalid status code: ${status}` })
    })
    void deliver(core.counters, r.webhook, body, signFalWebhook(body, privateKey, r.id))
  }

  const submit = (res: ServerResponse, model: string, body: unknown, webhook: string | null) => {
    if (!isObject(body)) return sendJson(res, 422, { detail: [{ loc: ["body"], msg: "field required", type: "value_error.missing" }] })
    const r: Request = {
      ...startModelGeneration(core, settings, model, body, () => finish(r)),
      id: randomUUID(),
      app: model.split("/").slice(0, 2).join("/"),
      webhook,
      canceled: false
    }
    requests.push(r)
    const queuePosition = requests.filter((q) => q !== r && phaseOf(q, Date.now()) === "IN_QUEUE").length
    sendJson(res, 200, { status: "IN_QUEUE", request_id: r.id, ...urlsOf(r), queue_position: queuePosition })
  }

  const api = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    const { pathname: path, searchParams: query } = url
    const method = req.method ?? "GET"
    const onRequest = /^\/(.+)\/requests\/([^/]+)(\/status|\/cancel)?$/.exec(path)
    const operation = method === "POST"
      ? "start"
      : onRequest?.[3] === "/status"
      ? "poll"
      : onRequest?.[3] === "/cancel"
      ? "cancel"
      : onRequest !== null
      ? "result"
      : "other"
    if (await core.intercept(operation, res)) return
    if (!accepted.has(/^Key (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "")) return sendJson(res, 401, { detail: "Unauthorized" })
    if (operation === "start") {
      const model = path.replace(/^\/+|\/+$/g, "")
      if (!/^[\w.-]+(\/[\w.-]+)+$/.test(model)) return sendJson(res, 404, { detail: "Application not found" })
      return submit(res, model, await readJson(req), query.get("fal_webhook"))
    }
    const r = onRequest === null ? undefined : requests.find((q) => q.id === onRequest[2] && q.app === onRequest[1])
    if (r === undefined) return sendJson(res, 404, { detail: "Request not found" })
    const now = Date.now()
    const phase = phaseOf(r, now)
    if (operation === "poll" && method === "GET") {
      core.counters.polls++
      const common = { status: phase, request_id: r.id, response_url: urlsOf(r).response_url }
      if (phase === "IN_QUEUE") {
        const ahead = requests.filter((q) => q.createdAt < r.createdAt && phaseOf(q, now) === "IN_QUEUE").length
        return sendJson(res, 202, { ...common, queue_position: ahead })
      }
      if (phase === "IN_PROGRESS") return sendJson(res, 202, { ...common, logs: query.get("logs") === "1" ? logsOf(r, now) : null })
      return sendJson(res, 200, { ...common, logs: null, metrics: { inference_time: r.durationMs / 1000 } })
    }
    if (operation === "result" && method === "GET") {
      if (phase !== "COMPLETED") return sendJson(res, 400, { detail: "Request is still in progress" })
      const [status, answer] = resultOf(r)
      return sendJson(res, status, answer, status === 200 ? {} : { "x-fal-error-type": String(answer["error_type"] ?? "model_error") })
    }
    if (operation === "cancel" && method === "PUT") {
      core.counters.cancels++
      if (phase === "COMPLETED") return sendJson(res, 400, { status: "ALREADY_COMPLETED" })
      r.canceled = true
      finish(r)
      return sendJson(res, 202, { status: "CANCELLATION_REQUESTED" })
    }
    sendJson(res, 405, { detail: "Method not allowed" })
  }

  const listening = await listenServingFiles({ port: options.port ?? 0, largeFileBytes: settings.largeFileBytes, counters: core.counters }, api)
  base = listening.url

  return {
    ...core.controls(listening),
    apiKey,
    acceptOnly: (...keys) => {
      accepted = new Set(keys)
    },
    publicKeysJwks: JSON.stringify({ keys: [{ ...jwk, kid: "simulator" }] }),
    publicKeyBase64: Buffer.from(jwk.x!, "base64url").toString("base64"),
    privateKey
  }
}
