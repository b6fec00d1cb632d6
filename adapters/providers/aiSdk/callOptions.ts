import type {
  Experimental_VideoModelV4CallOptions as VideoModelV4CallOptions,
  ImageModelV4CallOptions,
  JSONObject,
  SharedV4ProviderOptions,
  SpeechModelV4CallOptions
} from "@ai-sdk/provider"

/**
 * A job's mapped input as an AI SDK call. The call options the AI SDK names are read from the
 * input fields of the same name (`imageUrl` and `maskUrl` become file URLs); every other field
 * goes to `providerOptions[<the package's provider name>]`, which provider packages pass on to
 * their API as body parameters, merged under the input's own `providerOptions` if it has one.
 */
type Input = Readonly<Record<string, unknown>>

const str = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)
const num = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined)
const bool = (value: unknown): boolean | undefined => (typeof value === "boolean" ? value : undefined)
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** Only the fields set: the speech options are optional, not undefined. */
const defined = <A extends Record<string, unknown>>(fields: A): { [K in keyof A]?: Exclude<A[K], undefined> } =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as { [K in keyof A]?: Exclude<A[K], undefined> }

/** "replicate.image" → "replicate": the key the package reads its providerOptions under. */
export const providerOptionsKey = (modelProvider: string): string => modelProvider.split(".")[0] ?? modelProvider

const providerOptionsOf = (input: Input, named: ReadonlyArray<string>, key: string): SharedV4ProviderOptions => {
  const rest = Object.fromEntries(Object.entries(input).filter(([name]) => !named.includes(name) && name !== "providerOptions"))
  const given = isObject(input.providerOptions) ? (input.providerOptions as SharedV4ProviderOptions) : {}
  return { ...given, [key]: { ...(rest as JSONObject), ...given[key] } }
}

const IMAGE_FIELDS = ["prompt", "n", "size", "aspectRatio", "seed", "imageUrl", "maskUrl"]

export const imageCallOptions = (input: Input, key: string, headers: Record<string, string>): ImageModelV4CallOptions => {
  const imageUrl = str(input.imageUrl)
  const maskUrl = str(input.maskUrl)
  return {
    prompt: str(input.prompt),
    n: num(input.n) ?? 1,
    size: str(input.size) as ImageModelV4CallOptions["size"],
    aspectRatio: str(input.aspectRatio) as ImageModelV4CallOptions["aspectRatio"],
    seed: num(input.seed),
    files: imageUrl === undefined ? undefined : [{ type: "url", url: imageUrl }],
    mask: maskUrl === undefined ? undefined : { type: "url", url: maskUrl },
    providerOptions: providerOptionsOf(input, IMAGE_FIELDS, key),
    headers
  }
}

const VIDEO_FIELDS = ["prompt", "n", "aspectRatio", "resolution", "duration", "fps", "seed", "imageUrl", "generateAudio"]

export const videoCallOptions = (input: Input, key: string, headers: Record<string, string>): VideoModelV4CallOptions => {
  const imageUrl = str(input.imageUrl)
  return {
    prompt: str(input.prompt),
    n: num(input.n) ?? 1,
    aspectRatio: str(input.aspectRatio) as VideoModelV4CallOptions["aspectRatio"],
    resolution: str(input.resolution) as VideoModelV4CallOptions["resolution"],
    duration: num(input.duration),
    fps: num(input.fps),
    seed: num(input.seed),
    image: imageUrl === undefined ? undefined : { type: "url", url: imageUrl },
    frameImages: undefined,
    inputReferences: undefined,
    generateAudio: bool(input.generateAudio),
    providerOptions: providerOptionsOf(input, VIDEO_FIELDS, key),
    headers
  }
}

const SPEECH_FIELDS = ["text", "prompt", "voice", "outputFormat", "instructions", "speed", "language"]

/** The text to speak is `text`, or `prompt` for catalogs whose models are all prompted. */
export const speechCallOptions = (input: Input, key: string, headers: Record<string, string>): SpeechModelV4CallOptions => ({
  text: str(input.text) ?? str(input.prompt) ?? "",
  ...defined({
    voice: str(input.voice),
    outputFormat: str(input.outputFormat),
    instructions: str(input.instructions),
    speed: num(input.speed),
    language: str(input.language)
  }),
  providerOptions: providerOptionsOf(input, SPEECH_FIELDS, key) as Record<string, JSONObject>,
  headers
})
