import type { Transport } from "./transport.js"
import type { Upload } from "./types.js"

/** What `upload` sends: bytes (a Buffer is a Uint8Array), a Blob or File, or a web or Node stream. */
export type UploadBody = Uint8Array | ArrayBuffer | Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>

export interface UploadOptions {
  /** A plain name (no slashes), at most 255 characters. */
  readonly filename: string
  /** The file's media type; a Blob's own type when not given. */
  readonly contentType?: string | undefined
  /** The length in bytes: required for streams, whose length the client cannot know. */
  readonly size?: number | undefined
  readonly signal?: AbortSignal | undefined
}

/** A Node stream (or any async iterable of bytes) as a web stream, which fetch takes everywhere. */
const webStream = (source: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> => {
  const iterator = source[Symbol.asyncIterator]()
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await iterator.next()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    async cancel() {
      await iterator.return?.()
    }
  })
}

const sizeOf = (body: UploadBody): number | undefined =>
  body instanceof Uint8Array || body instanceof ArrayBuffer ? body.byteLength : body instanceof Blob ? body.size : undefined

/**
 * Presign with the size (so the URL takes exactly that many bytes), then one PUT with the
 * Content-Type and Content-Length the URL was signed for. The PUT is not retried: a stream
 * cannot be sent twice, and the URL takes one file; upload again instead.
 */
export const uploadFile = async (transport: Transport, body: UploadBody, options: UploadOptions): Promise<Upload> => {
  const contentType = options.contentType ?? (body instanceof Blob && body.type !== "" ? body.type : undefined)
  if (contentType === undefined) throw new TypeError("upload: give options.contentType (the file's media type)")
  const size = options.size ?? sizeOf(body)
  if (size === undefined) throw new TypeError("upload: a stream needs options.size, its length in bytes")
  const presigned = await transport.json<{ readonly data: Upload }>({
    method: "POST",
    path: "/v1/uploads/presign",
    json: { filename: options.filename, contentType, size },
    // A repeated presign only leaves an unused upload behind, which expires.
    retry: true,
    signal: options.signal
  })
  await transport.request({
    method: "PUT",
    path: presigned.data.uploadUrl,
    auth: false,
    // Browsers set Content-Length themselves (and ignore this one); Node's fetch sends it for streams.
    headers: { "content-type": contentType, "content-length": String(size) },
    body: body instanceof ReadableStream || !(Symbol.asyncIterator in body) ? body as BodyInit : webStream(body),
    retry: false,
    signal: options.signal
  }, async (response) => {
    await response.body?.cancel()
  })
  return presigned.data
}
