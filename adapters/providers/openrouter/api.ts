import { Option, Schema } from "effect"
import { HTTP_RETRY_RULES, type ProviderApi } from "../providerHttp.js"
import { ErrorBody } from "./schema.js"

const decodeErrorBody = Schema.decodeUnknownOption(ErrorBody)

/**
 * OpenRouter's answers as the shared HTTP exchange reads them: its error body, and HTTP's retry
 * rules (408 timed out, 429 rate limited, 502 model down and 503 no provider available are asked
 * again; 400, 401, 402 out of credits and 403 moderation are final). A 502 or 504 to a submit may
 * come after the upstream provider took the job, so the start's outcome is left unknown.
 */
export const openRouterApi = (apiKeys: ReadonlyArray<string>): ProviderApi => ({
  name: "OpenRouter",
  secrets: apiKeys,
  errorMessage: (body) => Option.getOrUndefined(Option.map(decodeErrorBody(body), ({ error }) => error.message)),
  // A moderation refusal carries `metadata.reasons` and `metadata.flagged_input`.
  errorFacts: (body) =>
    Option.match(Option.flatMap(decodeErrorBody(body), ({ error }) => Option.fromNullishOr(error.metadata)), {
      onNone: () => ({}),
      onSome: (metadata) => (metadata.reasons !== undefined || metadata.flagged_input !== undefined ? { contentBlocked: true } : {})
    }),
  ...HTTP_RETRY_RULES
})
