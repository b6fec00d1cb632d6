import { Effect, Schema } from "effect"
import { HttpClientRequest } from "effect/http"
import type { ProviderError, ProviderOutput, ProviderRequest, StartOutcome } from "../../../src/ports/Provider.js"
import { type ProviderApi, sendJson } from "../providerHttp.js"
import { base64Source, urlOutput } from "../providerOutputs.js"

const Base64 = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9+/]*={0,2}$/, { message: "base64 text" }))

/** One picture of an Images API answer: inline (gpt-image models, or `response_format: "b64_json"`) or a URL (dall-e). */
const ImageData = Schema.Struct({
  b64_json: Schema.optional(Schema.NullOr(Base64)),
  url: Schema.optional(Schema.NullOr(Schema.String.check(Schema.isPattern(/^https?:\/\//)))),
  revised_prompt: Schema.optional(Schema.NullOr(Schema.String))
}).check(Schema.makeFilter((image) => (image.b64_json ?? image.url) != null || "an image with b64_json or url"))

const ImagesResponse = Schema.Struct({
  data: Schema.Array(ImageData),
  output_format: Schema.optional(Schema.NullOr(Schema.String))
})

const contentTypeOf = (format: unknown): string =>
  typeof format === "string" && /^(png|jpeg|webp|gif)$/.test(format) ? `image/${format}` : "image/png"

const outputOf = (image: typeof ImageData.Type, contentType: string): ProviderOutput => {
  const metadata = image.revised_prompt == null ? undefined : { revisedPrompt: image.revised_prompt }
  return image.b64_json != null
    ? { type: "image", source: base64Source(image.b64_json, contentType), contentType, ...(metadata === undefined ? {} : { metadata }) }
    : urlOutput(image.url!, "image", { contentType, metadata })
}

/**
 * POST /images/generations: the Images API answers with the pictures themselves, so the start
 * is also the end. The job's mapped input is the request body; the catalog's model is `model`.
 */
export const generateImages = (
  api: ProviderApi,
  baseUrl: string,
  headers: Readonly<Record<string, string>>,
  timeoutMs: number,
  request: ProviderRequest
): Effect.Effect<StartOutcome, ProviderError> =>
  sendJson(
    api,
    HttpClientRequest.post(`${baseUrl}/images/generations`).pipe(
      HttpClientRequest.setHeaders(headers),
      HttpClientRequest.bodyJsonUnsafe({ ...request.input, model: request.providerModel })
    ),
    ImagesResponse,
    { timeoutMs, isStart: true }
  ).pipe(
    Effect.map(({ data, output_format }): StartOutcome => {
      const contentType = contentTypeOf(output_format ?? request.input["output_format"])
      return data.length === 0
        ? { _tag: "Finished", status: { _tag: "Failed", message: "OpenAI answered without an image", outputInvalid: true } }
        : { _tag: "Finished", status: { _tag: "Succeeded", outputs: data.map((image) => outputOf(image, contentType)) } }
    })
  )
