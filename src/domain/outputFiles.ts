import type { OutputType } from "./job.js"

/** The largest output file of each type the engine stores, in bytes. */
export type OutputSizeCaps = Readonly<Record<OutputType, number>>

const MiB = 1024 * 1024

export const DEFAULT_OUTPUT_SIZE_CAPS: OutputSizeCaps = {
  video: 2048 * MiB,
  image: 50 * MiB,
  audio: 500 * MiB,
  text: 10 * MiB
}

/** "Image/PNG; charset=x" -> "image/png". */
export const mediaTypeOf = (contentType: string): string => contentType.split(";")[0]!.trim().toLowerCase()

/**
 * Whether a file of `contentType` may be an output of `type`: a media type of that kind
 * (image/*, video/*, audio/*, text/*), or exactly the type the provider declared for the output
 * (an animated PNG standing for a video, JSON for text).
 */
export const acceptsContentType = (type: OutputType, contentType: string, declared?: string): boolean => {
  const media = mediaTypeOf(contentType)
  return media.startsWith(`${type}/`) || (declared !== undefined && media === mediaTypeOf(declared))
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  "image/png": "png",
  "image/apng": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "image/gif": "gif",
  "image/svg+xml": "svg",
  "video/mp4": "mp4",
  "video/webm": "webm",
  "video/quicktime": "mov",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/wave": "wav",
  "audio/mpeg": "mp3",
  "audio/ogg": "ogg",
  "audio/flac": "flac",
  "text/plain": "txt",
  "text/markdown": "md",
  "application/json": "json"
}

/** The stored file's extension: a known one, else the media subtype when it is a plain word, else "bin". */
export const extensionOf = (contentType: string): string => {
  const media = mediaTypeOf(contentType)
  const known = EXTENSIONS[media]
  if (known !== undefined) return known
  const subtype = media.split("/")[1] ?? ""
  return /^[a-z0-9]{1,10}$/.test(subtype) ? subtype : "bin"
}
