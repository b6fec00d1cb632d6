import type { OutputType } from "../../../src/domain/job.js"

/** Runway's task-creating endpoints (POST /v1/{endpoint}) and what their tasks put out. */
export const RUNWAY_ENDPOINTS = {
  image_to_video: "video",
  text_to_video: "video",
  video_to_video: "video",
  video_upscale: "video",
  character_performance: "video",
  text_to_image: "image",
  text_to_speech: "audio",
  sound_effect: "audio",
  speech_to_speech: "audio",
  voice_dubbing: "audio",
  voice_isolation: "audio"
} as const satisfies Record<string, OutputType>

export type RunwayEndpoint = keyof typeof RUNWAY_ENDPOINTS

export const isRunwayEndpoint = (name: string): name is RunwayEndpoint => Object.hasOwn(RUNWAY_ENDPOINTS, name)

/** What to expect from an output URL that answers octet-stream. */
export const RUNWAY_CONTENT_TYPES: Record<OutputType, string> = {
  video: "video/mp4",
  image: "image/png",
  audio: "audio/mpeg",
  text: "text/plain"
}

export interface RunwayTarget {
  readonly endpoint: RunwayEndpoint
  readonly model: string
}

/**
 * Which endpoint a catalog's provider model goes to. `"image_to_video/gen4_turbo"` names it;
 * a bare model name is sent where its input points: a `promptImage` to image_to_video, a
 * `videoUri` or `promptVideo` to video_to_video, a model named for images to text_to_image, and
 * anything else to text_to_video. Undefined for an endpoint Runway does not have.
 */
export const runwayTargetOf = (providerModel: string, input: Readonly<Record<string, unknown>>): RunwayTarget | undefined => {
  const slash = providerModel.indexOf("/")
  if (slash >= 0) {
    const endpoint = providerModel.slice(0, slash)
    const model = providerModel.slice(slash + 1)
    return isRunwayEndpoint(endpoint) && model.length > 0 ? { endpoint, model } : undefined
  }
  const endpoint: RunwayEndpoint = input["promptImage"] !== undefined
    ? "image_to_video"
    : input["videoUri"] !== undefined || input["promptVideo"] !== undefined
    ? "video_to_video"
    : /image/.test(providerModel)
    ? "text_to_image"
    : "text_to_video"
  return { endpoint, model: providerModel }
}
