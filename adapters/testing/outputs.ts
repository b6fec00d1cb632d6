import { Stream } from "effect"
import type { CatalogModel } from "../../src/domain/catalog.js"
import type { OutputSource, ProviderOutput } from "../../src/ports/Provider.js"
import { encodeApng, encodePng, type Rgba } from "../generators/demo/png.js"
import { encodeWav } from "../generators/demo/wav.js"

export interface OutputOptions {
  /**
   * Default: the helper's usual type (image/png, audio/wav, video/mp4, text/plain). Another type
   * is declared with the output, so the engine accepts it for the output's kind (image/apng as a
   * video, application/json as text); the stored file's extension follows it.
   */
  readonly contentType?: string | undefined
  readonly metadata?: Record<string, unknown> | undefined
}

const pixel: Rgba = { width: 1, height: 1, pixels: new Uint8Array([255, 0, 0, 255]) }

/** A 1×1 PNG, as a plain Uint8Array (not a Buffer) so it equals the bytes a download reads back. */
export const TINY_PNG: Uint8Array = new Uint8Array(encodePng(pixel))
/** A tenth of a second of silence, as 16-bit mono WAV. */
export const TINY_WAV: Uint8Array = new Uint8Array(encodeWav(new Float32Array(800), 8_000))

const bytes = (body: Uint8Array, contentType: string): OutputSource => ({ _tag: "Bytes", body: Stream.make(body), contentType })

const output = (type: ProviderOutput["type"], body: Uint8Array, defaultType: string, options: OutputOptions): ProviderOutput => {
  const contentType = options.contentType ?? defaultType
  return {
    type,
    source: bytes(body, contentType),
    contentType,
    ...(options.metadata === undefined ? {} : { metadata: options.metadata })
  }
}

export const imageOutput = (body: Uint8Array = TINY_PNG, options: OutputOptions = {}): ProviderOutput =>
  output("image", body, "image/png", options)

export const textOutput = (text: string, options: OutputOptions = {}): ProviderOutput =>
  output("text", new TextEncoder().encode(text), "text/plain; charset=utf-8", options)

export const audioOutput = (body: Uint8Array = TINY_WAV, options: OutputOptions = {}): ProviderOutput =>
  output("audio", body, "audio/wav", options)

/** A video; `poster` (PNG bytes) becomes both its thumbnail and its poster image. */
export const videoOutput = (
  body: Uint8Array,
  options: OutputOptions & { readonly poster?: Uint8Array | undefined } = {}
): ProviderOutput => {
  const made = output("video", body, "video/mp4", options)
  if (options.poster === undefined) return made
  return { ...made, thumbnail: bytes(options.poster, "image/png"), posterImage: bytes(options.poster, "image/png") }
}

/** What a job gets when nothing was scripted for it: one small valid file of its model's category. */
export const defaultOutputs = (model: CatalogModel): ReadonlyArray<ProviderOutput> => {
  switch (model.category) {
    case "image":
      return [imageOutput()]
    case "audio":
      return [audioOutput()]
    case "video":
      // An animated PNG: a real moving picture without a video encoder.
      return [videoOutput(encodeApng([pixel, pixel], 100), { contentType: "image/apng", poster: TINY_PNG })]
    default:
      return [textOutput("test output")]
  }
}
