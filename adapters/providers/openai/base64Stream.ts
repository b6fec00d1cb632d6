import { Option, Stream } from "effect"

/** 64 KiB of base64 text per chunk: a multiple of 4, so every chunk decodes on its own. */
const CHUNK_CHARS = 1 << 16

/**
 * The bytes of a base64 text, decoded a chunk at a time as the stream is read: the decoded file is
 * never whole in memory beside the text it came from.
 */
export const base64Stream = (base64: string, chunkChars: number = CHUNK_CHARS): Stream.Stream<Uint8Array> => {
  const step = Math.max(4, chunkChars - (chunkChars % 4))
  return Stream.unfold(0, (offset) =>
    offset >= base64.length
      ? Option.none()
      : Option.some([Buffer.from(base64.slice(offset, offset + step), "base64") as Uint8Array, offset + step] as const)
  )
}
