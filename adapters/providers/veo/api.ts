import { Option, Schema } from "effect"
import { HTTP_RETRY_RULES, type ProviderApi } from "../providerHttp.js"
import { ErrorBody } from "./schema.js"

const decodeErrorBody = Schema.decodeUnknownOption(ErrorBody)

/**
 * The Gemini API's answers as the shared HTTP exchange reads them: Google's error body, and
 * HTTP's retry rules (429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE and 504
 * DEADLINE_EXCEEDED are asked again; 400 INVALID_ARGUMENT, 403 PERMISSION_DENIED, 404 NOT_FOUND
 * are final).
 */
export const veoApi = (apiKeys: ReadonlyArray<string>): ProviderApi => ({
  name: "Gemini API",
  secrets: apiKeys,
  errorMessage: (body) =>
    Option.getOrUndefined(Option.flatMap(decodeErrorBody(body), ({ error }) => Option.fromNullishOr(error.message))),
  // google.rpc.Status's canonical name: INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE, ...
  errorFacts: (body) =>
    Option.match(Option.flatMap(decodeErrorBody(body), ({ error }) => Option.fromNullishOr(error.status)), {
      onNone: () => ({}),
      onSome: (providerCode) => ({ providerCode })
    }),
  ...HTTP_RETRY_RULES
})
