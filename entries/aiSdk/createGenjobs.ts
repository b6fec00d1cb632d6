import type {
  ImageModelV4,
  JSONValue,
  SharedV4Warning,
  SpeechModelV4,
  Experimental_VideoModelV4 as VideoModelV4,
  Experimental_VideoModelV4OperationStatusResult as VideoModelV4OperationStatusResult
} from "@ai-sdk/provider"
import { APICallError } from "@ai-sdk/provider"
import { type ClientOptions, createClient, type Job, type JobOutput } from "../client.js"
import { withCall } from "./callKey.js"
import { apiCallError, jobFailedError } from "./errors.js"
import { imageInput, type MappedCall, speechInput, videoInput } from "./inputs.js"

/** The client's options: the engine's `baseUrl`, an `apiKey`, and optionally `fetch`, `retries`, `timeoutMs`. */
export type GenjobsSettings = ClientOptions

/** The engine as an AI SDK provider: each model is a catalog slug (provider/model/capability). */
export interface GenjobsProvider {
  readonly imageModel: (slug: string) => ImageModelV4
  readonly videoModel: (slug: string) => VideoModelV4
  readonly speechModel: (slug: string) => SpeechModelV4
}

const PROVIDER = "genjobs"

type CallHeaders = Record<string, string | undefined> | undefined

const response = (slug: string) => ({ timestamp: new Date(), modelId: slug, headers: undefined })

export const createGenjobs = (settings: GenjobsSettings): GenjobsProvider => {
  const client = createClient(settings)
  const submitUrl = `${settings.baseUrl.replace(/\/+$/, "")}/v1/jobs/submit`
  const jobUrl = (jobId: string) => `${settings.baseUrl.replace(/\/+$/, "")}/v1/jobs/${encodeURIComponent(jobId)}`
  const send = settings.fetch ?? ((url: string, init: RequestInit) => globalThis.fetch(url, init))

  /** Charges and queues the job (the Idempotency-Key makes a repeat the same job); its id. */
  const submit = async (slug: string, call: MappedCall, idempotencyKey: string, signal: AbortSignal | undefined) => {
    try {
      return (await client.submit(slug, call.input, { version: call.version, idempotencyKey, signal })).jobId
    } catch (error) {
      throw apiCallError(error, submitUrl, { model: slug, input: call.input, version: call.version })
    }
  }

  /**
   * An output's bytes, read here through the client's fetch: the AI SDK's own downloader refuses
   * private addresses, where an engine often is. No API key: output URLs are capabilities.
   */
  const bytesOf = async (output: JobOutput, signal: AbortSignal | undefined) => {
    const answer = await send(output.url, { method: "GET", signal: signal ?? null }).catch((cause: unknown) => {
      throw new APICallError({ message: `NETWORK_ERROR: reading ${output.url}`, url: output.url, requestBodyValues: {}, cause, isRetryable: true, data: { code: "NETWORK_ERROR" } })
    })
    if (!answer.ok) {
      throw new APICallError({ message: `HTTP_${answer.status}: reading ${output.url}`, url: output.url, requestBodyValues: {}, statusCode: answer.status, data: { code: `HTTP_${answer.status}` } })
    }
    return { data: new Uint8Array(await answer.arrayBuffer()), mediaType: output.contentType ?? answer.headers.get("content-type") ?? "application/octet-stream" }
  }

  /** Submits and waits: a completed job, or the AI SDK's error for one that failed. */
  const run = async (slug: string, call: MappedCall, idempotencyKey: string, signal: AbortSignal | undefined): Promise<Job> => {
    const jobId = await submit(slug, call, idempotencyKey, signal)
    let job: Job
    try {
      job = await client.wait(jobId, { signal })
    } catch (error) {
      throw apiCallError(error, jobUrl(jobId), { model: slug, input: call.input })
    }
    if (job.status !== "completed") throw jobFailedError(job, jobUrl(jobId), { model: slug, input: call.input })
    return job
  }

  const outputsOf = (job: Job, type: JobOutput["type"]) => (job.outputs ?? []).filter((output) => output.type === type)

  const imageModel = (slug: string): ImageModelV4 => ({
    specificationVersion: "v4",
    provider: PROVIDER,
    modelId: slug,
    // One job is one generation: the AI SDK asks for n images as n calls, each its own job and key.
    maxImagesPerCall: 1,
    doGenerate: async (options) => {
      return withCall(options.headers, async ({ keyFor, uploads }) => {
        const call = await imageInput(client, options, uploads)
        const job = await run(slug, call, await keyFor(slug, call.input), options.abortSignal)
        const images = await Promise.all(outputsOf(job, "image").map((output) => bytesOf(output, options.abortSignal)))
        return {
          images: images.map((image) => image.data),
          warnings: call.warnings,
          providerMetadata: { [PROVIDER]: { images: images.map(() => ({ jobId: job.jobId })) } },
          response: response(slug)
        }
      })
    }
  })

  const videosOf = async (job: Job, signal: AbortSignal | undefined) =>
    (await Promise.all(outputsOf(job, "video").map((output) => bytesOf(output, signal))))
      .map((video) => ({ type: "binary" as const, data: video.data, mediaType: video.mediaType }))

  const videoStatus = async (slug: string, job: Job, signal: AbortSignal | undefined, warnings: Array<SharedV4Warning>): Promise<VideoModelV4OperationStatusResult> => {
    if (job.status === "pending" || job.status === "processing") {
      return { status: "pending", providerMetadata: { [PROVIDER]: { jobId: job.jobId, status: job.status, progress: job.progress } }, response: response(slug) }
    }
    // A failed job throws rather than answering `error`, which the AI SDK turns into a plain Error: the engine's code stays on the APICallError.
    if (job.status !== "completed") throw jobFailedError(job, jobUrl(job.jobId), { jobId: job.jobId })
    return {
      status: "completed",
      videos: await videosOf(job, signal),
      warnings,
      providerMetadata: { [PROVIDER]: { jobId: job.jobId } },
      response: response(slug)
    }
  }

  const videoModel = (slug: string): VideoModelV4 => ({
    specificationVersion: "v4",
    provider: PROVIDER,
    modelId: slug,
    maxVideosPerCall: 1,
    doGenerate: async (options) => {
      return withCall(options.headers as CallHeaders, async ({ keyFor, uploads }) => {
        const call = await videoInput(client, options, uploads)
        const job = await run(slug, call, await keyFor(slug, call.input), options.abortSignal)
        return {
          videos: await videosOf(job, options.abortSignal),
          warnings: call.warnings,
          providerMetadata: { [PROVIDER]: { jobId: job.jobId } },
          response: response(slug)
        }
      })
    },
    // The operation is the job id: a workflow that stored it resumes with doStatus after a crash, charged once.
    doStart: async (options) => {
      return withCall(options.headers as CallHeaders, async ({ keyFor, uploads }) => {
        const call = await videoInput(client, options, uploads)
        const jobId = await submit(slug, call, await keyFor(slug, call.input), options.abortSignal)
        return { operation: jobId, warnings: call.warnings, providerMetadata: { [PROVIDER]: { jobId } }, response: response(slug) }
      })
    },
    doStatus: async ({ abortSignal, operation }) => {
      const jobId = operationJobId(operation)
      let job: Job
      try {
        job = await client.get(jobId, { signal: abortSignal })
      } catch (error) {
        throw apiCallError(error, jobUrl(jobId), { jobId })
      }
      return videoStatus(slug, job, abortSignal, [])
    }
  })

  const speechModel = (slug: string): SpeechModelV4 => ({
    specificationVersion: "v4",
    provider: PROVIDER,
    modelId: slug,
    doGenerate: async (options) => {
      const call = speechInput(options)
      return withCall(options.headers, async ({ keyFor }) => {
        const job = await run(slug, call, await keyFor(slug, call.input), options.abortSignal)
        const [audio] = outputsOf(job, "audio")
        if (audio === undefined) throw jobFailedError({ ...job, status: "failed", error: { code: "GENERATION_FAILED", message: `job ${job.jobId} has no audio output`, type: "output_invalid", retryable: false } }, jobUrl(job.jobId), { model: slug })
        const { data } = await bytesOf(audio, options.abortSignal)
        return { audio: data, warnings: call.warnings, providerMetadata: { [PROVIDER]: { jobId: job.jobId } }, response: { timestamp: new Date(), modelId: slug } }
      })
    }
  })

  return { imageModel, videoModel, speechModel }
}

/** The job id a `doStart` returned; anything else is not an operation of this provider. */
const operationJobId = (operation: JSONValue): string => {
  if (typeof operation === "string" && operation !== "") return operation
  throw new APICallError({ message: "INVALID_OPERATION: a genjobs operation is the job id doStart returned", url: "", requestBodyValues: { operation }, isRetryable: false, data: { code: "INVALID_OPERATION" } })
}
