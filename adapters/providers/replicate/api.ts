import { Option, Schema } from "effect"
import { HTTP_RETRY_RULES, type ProviderApi } from "../providerHttp.js"
import { Problem } from "./schema.js"

const decodeProblem = Schema.decodeUnknownOption(Problem)

/** Problem details' `detail` (else `title`), as one line. */
const problemMessage = (body: unknown): string | undefined =>
  Option.getOrUndefined(Option.map(decodeProblem(body), ({ detail, title }) =>
    typeof detail === "string" ? detail : detail === undefined ? title : JSON.stringify(detail)))

/** Replicate's answers as the shared HTTP exchange reads them: problem details, HTTP's retry rules. */
export const replicateApi = (apiTokens: ReadonlyArray<string>): ProviderApi => ({
  name: "Replicate",
  secrets: apiTokens,
  errorMessage: problemMessage,
  ...HTTP_RETRY_RULES
})
