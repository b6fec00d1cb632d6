import { Effect, Stream } from "effect"
import type { OutputType } from "../../src/domain/job.js"
import type { OutputSource, ProviderOutput, ProviderRequest } from "../../src/ports/Provider.js"

const OUTPUT_TYPES: ReadonlyArray<OutputType> = ["video", "image", "audio", "text"]
const isOutputType = (value: unknown): value is OutputType => OUTPUT_TYPES.includes(value as OutputType)

/**
 * The type the catalog promises for the model's outputs: the version's output schema
 * (`properties.type.const`), else the model's category when it names a type, else image.
 */
export const declaredOutputType = (request: ProviderRequest): OutputType => {
  const properties = request.version.outputSchema["properties"] as { readonly type?: { readonly const?: unknown } } | undefined
  const declared = properties?.type?.const
  if (isOutputType(declared)) return declared
  return isOutputType(request.model.category) ? request.model.category : "image"
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  webp: "image/webp",
  gif: "image/gif",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  wav: "audio/wav",
  mp3: "audio/mpeg",
  flac: "audio/flac",
  ogg: "audio/ogg",
  m4a: "audio/mp4",
  txt: "text/plain",
  json: "application/json"
}

/** The content type a URL's file extension names, when it names one. */
const contentTypeOfUrl = (url: string): string | undefined => {
  if (url.startsWith("data:")) return url.slice(5).split(/[;,]/)[0] || undefined
  try {
    const extension = new URL(url).pathname.split(".").pop()?.toLowerCase()
    return extension === undefined ? undefined : CONTENT_TYPES[extension]
  } catch {
    return undefined
  }
}

/** The output type a content type names; the declared type when it names none. */
export const outputTypeOf = (contentType: string | undefined, declared: OutputType): OutputType => {
  const major = contentType?.split("/")[0]
  if (major === "image" || major === "video" || major === "audio" || major === "text") return major
  if (contentType === "application/json") return "text"
  return declared
}

export const isUrl = (value: string): boolean => /^(https?:\/\/|data:)/i.test(value)

const encoder = new TextEncoder()

/** Bytes already at hand (a text answer, a decoded data URL) as an output's stream. */
const bytesSource = (body: Uint8Array, contentType: string): OutputSource => ({
  _tag: "Bytes",
  body: Stream.make(body),
  contentType
})

/** 64 KiB of base64 text per chunk: a multiple of 4, so every chunk decodes on its own. */
const BASE64_CHUNK_CHARS = 1 << 16

/**
 * The bytes of a base64 text, decoded a chunk at a time as the stream is read: the decoded file is
 * never whole in memory beside the text it came from.
 */
export const base64Stream = (base64: string, chunkChars: number = BASE64_CHUNK_CHARS): Stream.Stream<Uint8Array> => {
  const step = Math.max(4, chunkChars - (chunkChars % 4))
  return Stream.unfold(0, (offset) =>
    Effect.sync(() =>
      offset >= base64.length
        ? undefined
        : [Buffer.from(base64.slice(offset, offset + step), "base64") as Uint8Array, offset + step] as const
    ))
}

/** A provider's inline base64 file (an Images API answer, a data URL) as an output's stream. */
export const base64Source = (base64: string, contentType: string): OutputSource => ({
  _tag: "Bytes",
  body: base64Stream(base64),
  contentType
})

export const textOutput = (text: string, contentType = "text/plain; charset=utf-8"): ProviderOutput => ({
  type: "text",
  source: bytesSource(encoder.encode(text), contentType),
  contentType
})

/**
 * A URL answered by a provider as an output's source. Data URLs (base64 or percent-encoded)
 * are decoded here, since nothing can fetch them; `headers` go with requests for the others.
 */
const urlSource = (url: string, headers?: Readonly<Record<string, string>>): OutputSource => {
  if (!url.startsWith("data:")) return { _tag: "Url", url, ...(headers === undefined ? {} : { headers }) }
  const comma = url.indexOf(",")
  const meta = url.slice(5, comma)
  const data = url.slice(comma + 1)
  const contentType = meta.split(";")[0] || "application/octet-stream"
  return meta.endsWith(";base64")
    ? base64Source(data, contentType)
    : bytesSource(new Uint8Array(Buffer.from(decodeURIComponent(data), "utf8")), contentType)
}

/** One output from a URL: its type from its content type (given, or named by its extension), else the declared type. */
export const urlOutput = (
  url: string,
  declared: OutputType,
  options: {
    readonly contentType?: string | undefined
    readonly headers?: Readonly<Record<string, string>> | undefined
    readonly metadata?: Readonly<Record<string, unknown>> | undefined
  } = {}
): ProviderOutput => {
  const contentType = options.contentType ?? contentTypeOfUrl(url)
  return {
    type: outputTypeOf(contentType, declared),
    source: urlSource(url, options.headers),
    ...(contentType === undefined ? {} : { contentType }),
    ...(options.metadata === undefined || Object.keys(options.metadata).length === 0 ? {} : { metadata: options.metadata })
  }
}
