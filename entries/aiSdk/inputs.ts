import type {
  ImageModelV4CallOptions,
  ImageModelV4File,
  SharedV4Warning,
  SpeechModelV4CallOptions,
  Experimental_VideoModelV4CallOptions as VideoModelV4CallOptions,
  Experimental_VideoModelV4File as VideoModelV4File
} from "@ai-sdk/provider"
import type { GenjobsClient, JobInput } from "../client.js"
import { sha256 } from "./callKey.js"

/**
 * `providerOptions.genjobs`: what the AI SDK's call options cannot say. `input` is merged over
 * the fields the bridge maps (any field of the model's input schema); `version` picks a model
 * version instead of the latest stable one.
 */
export interface GenjobsProviderOptions {
  readonly input?: JobInput
  readonly version?: string
}

export interface MappedCall {
  readonly input: JobInput
  readonly version: string | undefined
  readonly warnings: Array<SharedV4Warning>
}

type Defined = Record<string, unknown>

/** Only the options the caller set: the model's own defaults apply to the rest. */
const defined = (fields: Defined): Defined => Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))

const genjobsOptions = (providerOptions: Record<string, unknown> | undefined): GenjobsProviderOptions =>
  (providerOptions?.genjobs ?? {}) as GenjobsProviderOptions

const bytesOf = (data: string | Uint8Array): Uint8Array =>
  typeof data === "string" ? Uint8Array.from(atob(data), (c) => c.charCodeAt(0)) : data

/**
 * A file input as a URL the engine's provider can read: a URL as is; bytes uploaded first, once
 * per call (`uploads`, by content), so the AI SDK's retry sends the same URL and so the same body.
 */
const fileUrl = (
  client: GenjobsClient,
  file: ImageModelV4File | VideoModelV4File,
  signal: AbortSignal | undefined,
  uploads: Map<string, Promise<string>>
): Promise<string> => {
  if (file.type === "url") return Promise.resolve(file.url)
  const bytes = bytesOf(file.data)
  return sha256(bytes).then((digest) => {
    const known = uploads.get(`${file.mediaType}:${digest}`)
    if (known !== undefined) return known
    const extension = file.mediaType.split("/")[1]?.replace(/[^a-z0-9]/gi, "") || "bin"
    const uploaded = client.upload(bytes, { filename: `input.${extension}`, contentType: file.mediaType, signal }).then((upload) => upload.fileUrl)
    // A failed upload is not kept: the retry uploads again.
    uploads.set(`${file.mediaType}:${digest}`, uploaded)
    uploaded.catch(() => uploads.delete(`${file.mediaType}:${digest}`))
    return uploaded
  })
}

const finish = (options: GenjobsProviderOptions, fields: Defined, warnings: Array<SharedV4Warning>): MappedCall => ({
  input: { ...defined(fields), ...options.input },
  version: options.version,
  warnings
})

/** generateImage: prompt, size as width and height, aspectRatio, seed; the first file as imageUrl. */
export const imageInput = async (client: GenjobsClient, call: ImageModelV4CallOptions, uploads: Map<string, Promise<string>>): Promise<MappedCall> => {
  const warnings: Array<SharedV4Warning> = []
  const [width, height] = call.size === undefined ? [] : call.size.split("x").map(Number)
  const first = call.files?.[0]
  if ((call.files?.length ?? 0) > 1) warnings.push({ type: "unsupported", feature: "files", details: "only the first file is sent, as imageUrl" })
  if (call.mask !== undefined) warnings.push({ type: "unsupported", feature: "mask" })
  return finish(genjobsOptions(call.providerOptions), {
    prompt: call.prompt,
    width,
    height,
    aspectRatio: call.aspectRatio,
    seed: call.seed,
    imageUrl: first === undefined ? undefined : await fileUrl(client, first, call.abortSignal, uploads)
  }, warnings)
}

/** experimental_generateVideo: prompt, aspectRatio, resolution, duration, fps, seed, generateAudio; the image as imageUrl. */
export const videoInput = async (client: GenjobsClient, call: VideoModelV4CallOptions, uploads: Map<string, Promise<string>>): Promise<MappedCall> => {
  const warnings: Array<SharedV4Warning> = []
  if (call.frameImages !== undefined) warnings.push({ type: "unsupported", feature: "frameImages" })
  if (call.inputReferences !== undefined) warnings.push({ type: "unsupported", feature: "inputReferences" })
  return finish(genjobsOptions(call.providerOptions), {
    prompt: call.prompt,
    aspectRatio: call.aspectRatio,
    resolution: call.resolution,
    duration: call.duration,
    fps: call.fps,
    seed: call.seed,
    generateAudio: call.generateAudio,
    imageUrl: call.image === undefined ? undefined : await fileUrl(client, call.image, call.abortSignal, uploads)
  }, warnings)
}

/** generateSpeech: the text as prompt (the catalog's models are prompted), voice, outputFormat, instructions, speed, language. */
export const speechInput = (call: SpeechModelV4CallOptions): MappedCall =>
  finish(genjobsOptions(call.providerOptions), {
    prompt: call.text,
    voice: call.voice,
    outputFormat: call.outputFormat,
    instructions: call.instructions,
    speed: call.speed,
    language: call.language
  }, [])
