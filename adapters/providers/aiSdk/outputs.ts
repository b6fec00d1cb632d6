import type { Experimental_VideoModelV4VideoData as VideoData } from "@ai-sdk/provider"
import { Stream } from "effect"
import type { OutputType } from "../../../src/domain/job.js"
import type { ProviderOutput } from "../../../src/ports/Provider.js"
import { base64Source, urlOutput } from "../providerOutputs.js"

/** Leading bytes of the formats image and speech models answer with; the AI SDK gives bytes without a type. */
const SIGNATURES: ReadonlyArray<readonly [string, ReadonlyArray<number | undefined>]> = [
  ["image/png", [0x89, 0x50, 0x4e, 0x47]],
  ["image/jpeg", [0xff, 0xd8, 0xff]],
  ["image/gif", [0x47, 0x49, 0x46, 0x38]],
  ["image/webp", [0x52, 0x49, 0x46, 0x46, undefined, undefined, undefined, undefined, 0x57, 0x45, 0x42, 0x50]],
  ["audio/wav", [0x52, 0x49, 0x46, 0x46, undefined, undefined, undefined, undefined, 0x57, 0x41, 0x56, 0x45]],
  ["audio/mpeg", [0x49, 0x44, 0x33]],
  ["audio/mpeg", [0xff, 0xfb]],
  ["audio/ogg", [0x4f, 0x67, 0x67, 0x53]],
  ["audio/flac", [0x66, 0x4c, 0x61, 0x43]]
]

/** The content type the bytes' signature names, else `fallback`. */
export const sniffContentType = (bytes: Uint8Array, fallback: string): string =>
  SIGNATURES.find(([, signature]) => signature.every((byte, i) => byte === undefined || bytes[i] === byte))?.[0] ?? fallback

const bytesOf = (data: string | Uint8Array): Uint8Array => (typeof data === "string" ? new Uint8Array(Buffer.from(data, "base64")) : data)

const bytesOutput = (type: OutputType, data: string | Uint8Array, fallback: string): ProviderOutput => {
  const bytes = bytesOf(data)
  const contentType = sniffContentType(bytes, fallback)
  return { type, source: { _tag: "Bytes", body: Stream.make(bytes), contentType }, contentType }
}

/** An image model's answer: base64 strings or bytes, one output each. */
export const imageOutputs = (images: ReadonlyArray<string | Uint8Array>): ReadonlyArray<ProviderOutput> =>
  images.map((image) => bytesOutput("image", image, "image/png"))

export const speechOutput = (audio: string | Uint8Array): ProviderOutput => bytesOutput("audio", audio, "audio/mpeg")

/**
 * A video model's answer. A URL is fetched by the engine like any provider's (its private-address
 * guard applies); base64 is decoded as the blob store reads it. A video the provider delivered to
 * storage of its own (`uploaded`) has no bytes to keep and is left out.
 */
export const videoOutputs = (videos: ReadonlyArray<VideoData>): ReadonlyArray<ProviderOutput> =>
  videos.flatMap((video): ReadonlyArray<ProviderOutput> => {
    switch (video.type) {
      case "url":
        return [urlOutput(video.url, "video", { contentType: video.mediaType })]
      case "base64":
        return [{ type: "video", source: base64Source(video.data, video.mediaType), contentType: video.mediaType }]
      case "binary":
        return [{ type: "video", source: { _tag: "Bytes", body: Stream.make(video.data), contentType: video.mediaType }, contentType: video.mediaType }]
      case "uploaded":
        return []
    }
  })
