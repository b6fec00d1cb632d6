import type { GeneratedFile, GeneratedOutput } from "../../src/ports/Generator.js"
import type { CatalogModel } from "../../src/domain/catalog.js"
import { encodeApng, encodePng, type Rgba } from "../generators/demo/png.js"
import { encodeWav } from "../generators/demo/wav.js"

export interface OutputOptions {
  /** Default: the helper's usual type (image/png, audio/wav, video/mp4, text/plain). */
  readonly contentType?: string | undefined
  /** The stored file's extension, without the dot. */
  readonly extension?: string | undefined
  readonly metadata?: Record<string, unknown> | undefined
}

const pixel: Rgba = { width: 1, height: 1, pixels: new Uint8Array([255, 0, 0, 255]) }

/** A 1×1 PNG, as a plain Uint8Array (not a Buffer) so it equals the bytes a download reads back. */
export const TINY_PNG: Uint8Array = new Uint8Array(encodePng(pixel))
/** A tenth of a second of silence, as 16-bit mono WAV. */
export const TINY_WAV: Uint8Array = new Uint8Array(encodeWav(new Float32Array(800), 8_000))

const file = (bytes: Uint8Array, contentType: string, extension: string): GeneratedFile => ({ bytes, contentType, extension })

const output = (
  type: GeneratedOutput["type"],
  bytes: Uint8Array,
  defaults: { readonly contentType: string; readonly extension: string },
  options: OutputOptions
): GeneratedOutput => ({
  type,
  file: file(bytes, options.contentType ?? defaults.contentType, options.extension ?? defaults.extension),
  ...(options.metadata === undefined ? {} : { metadata: options.metadata })
})

export const imageOutput = (bytes: Uint8Array = TINY_PNG, options: OutputOptions = {}): GeneratedOutput =>
  output("image", bytes, { contentType: "image/png", extension: "png" }, options)

export const textOutput = (text: string, options: OutputOptions = {}): GeneratedOutput =>
  output("text", new TextEncoder().encode(text), { contentType: "text/plain; charset=utf-8", extension: "txt" }, options)

export const audioOutput = (bytes: Uint8Array = TINY_WAV, options: OutputOptions = {}): GeneratedOutput =>
  output("audio", bytes, { contentType: "audio/wav", extension: "wav" }, options)

/** A video; `poster` (PNG bytes) becomes both its thumbnail and its poster image. */
export const videoOutput = (
  bytes: Uint8Array,
  options: OutputOptions & { readonly poster?: Uint8Array | undefined } = {}
): GeneratedOutput => {
  const made = output("video", bytes, { contentType: "video/mp4", extension: "mp4" }, options)
  if (options.poster === undefined) return made
  const poster = file(options.poster, "image/png", "png")
  return { ...made, thumbnail: poster, posterImage: poster }
}

/** What a job gets when nothing was scripted for it: one small valid file of its model's category. */
export const defaultOutputs = (model: CatalogModel): ReadonlyArray<GeneratedOutput> => {
  switch (model.category) {
    case "image":
      return [imageOutput()]
    case "audio":
      return [audioOutput()]
    case "video":
      // An animated PNG: a real moving picture without a video encoder.
      return [videoOutput(encodeApng([pixel, pixel], 100), { contentType: "image/apng", extension: "png", poster: TINY_PNG })]
    default:
      return [textOutput("test output")]
  }
}
