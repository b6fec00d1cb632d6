import { Option, Schema } from "effect"
import { type ProviderApi, retryAfterHeader } from "../providerHttp.js"

/** Runway's error body: `{ error }`, with the failed checks in `issues` when the input did not validate. */
const ErrorBody = Schema.Struct({
  error: Schema.String,
  issues: Schema.optional(Schema.Array(Schema.Struct({ message: Schema.String })))
})
const decodeErrorBody = Schema.decodeUnknownOption(ErrorBody)

/** Runway's answers as the shared HTTP exchange reads them: 429 and 5xx may be asked again (its error table). */
export const runwayApi = (apiSecrets: ReadonlyArray<string>): ProviderApi => ({
  name: "Runway",
  secrets: apiSecrets,
  errorMessage: (body) =>
    Option.getOrUndefined(Option.map(decodeErrorBody(body), ({ error, issues }) =>
      issues === undefined || issues.length === 0 ? error : `${error} (${issues.map((issue) => issue.message).join("; ")})`
    )),
  isRetryable: (status) => status === 429 || status >= 500,
  retryAfterMs: retryAfterHeader
})
