import { HttpClientRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import type {
  ProviderError,
  ProviderHandle,
  ProviderRequest,
  ProviderStatus,
  StartOutcome
} from "../../../src/ports/Provider.js"
import { type ProviderApi, sendJson } from "../providerHttp.js"

/** The Videos API's video object, as create and retrieve answer it. */
const Video = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  status: Schema.Literal("queued", "in_progress", "completed", "failed"),
  progress: Schema.optional(Schema.NullOr(Schema.Number)),
  seconds: Schema.optional(Schema.NullOr(Schema.String)),
  size: Schema.optional(Schema.NullOr(Schema.String)),
  error: Schema.optional(Schema.NullOr(Schema.Struct({ code: Schema.optional(Schema.NullOr(Schema.String)), message: Schema.String })))
})
type Video = typeof Video.Type

export interface VideosApi {
  readonly api: ProviderApi
  readonly baseUrl: string
  /** Authorization and organization headers: sent with every call, and handed to the engine to fetch the content. */
  readonly headers: Readonly<Record<string, string>>
  readonly timeoutMs: number
}

/**
 * The create body: the job's mapped input with the catalog's model. The API takes `seconds` as a
 * string ("4", "8", "12") and `input_reference` as an object, so a number and a bare URL are
 * given in those shapes.
 */
const createBody = (request: ProviderRequest): Record<string, unknown> => {
  const { seconds, input_reference: reference } = request.input
  return {
    ...request.input,
    model: request.providerModel,
    ...(typeof seconds === "number" ? { seconds: String(seconds) } : {}),
    ...(typeof reference === "string" ? { input_reference: { image_url: reference } } : {})
  }
}

const failure = (video: Video): string => {
  const code = video.error?.code == null ? "" : ` (${video.error.code})`
  return `OpenAI could not generate the video: ${video.error?.message ?? "no reason given"}${code}`
}

const progressOf = (video: Video) =>
  video.progress == null ? {} : { progress: Math.min(100, Math.max(0, video.progress)) }

/** POST /videos: OpenAI queues the generation and answers its id, the handle to follow. */
export const createVideo = (videos: VideosApi, request: ProviderRequest): Effect.Effect<StartOutcome, ProviderError> =>
  sendJson(
    videos.api,
    HttpClientRequest.post(`${videos.baseUrl}/videos`).pipe(
      HttpClientRequest.setHeaders(videos.headers),
      HttpClientRequest.bodyUnsafeJson(createBody(request))
    ),
    Video,
    { timeoutMs: videos.timeoutMs, isStart: true }
  ).pipe(
    Effect.map((video): StartOutcome =>
      video.status === "failed"
        ? { _tag: "Finished", status: { _tag: "Failed", message: failure(video) } }
        : { _tag: "Started", handle: { id: video.id } }
    )
  )

/**
 * GET /videos/{id}. A completed video is fetched by the engine from GET /videos/{id}/content,
 * which needs the same Authorization header: the output carries it in its source's `headers`,
 * never in the handle or in metadata.
 */
export const retrieveVideo = (videos: VideosApi, handle: ProviderHandle): Effect.Effect<ProviderStatus, ProviderError> => {
  const url = `${videos.baseUrl}/videos/${encodeURIComponent(handle.id)}`
  return sendJson(videos.api, HttpClientRequest.get(url).pipe(HttpClientRequest.setHeaders(videos.headers)), Video, { timeoutMs: videos.timeoutMs }).pipe(
    Effect.map((video): ProviderStatus => {
      switch (video.status) {
        case "queued":
        case "in_progress":
          return { _tag: "Running", ...progressOf(video) }
        case "failed":
          return { _tag: "Failed", message: failure(video) }
        case "completed":
          return {
            _tag: "Succeeded",
            outputs: [{
              type: "video",
              source: { _tag: "Url", url: `${url}/content`, headers: videos.headers },
              contentType: "video/mp4",
              thumbnail: { _tag: "Url", url: `${url}/content?variant=thumbnail`, headers: videos.headers },
              metadata: {
                ...(video.seconds == null ? {} : { seconds: video.seconds }),
                ...(video.size == null ? {} : { size: video.size })
              }
            }]
          }
      }
    })
  )
}
