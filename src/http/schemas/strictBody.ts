import { Context } from "effect"
import { HttpApi } from "effect/http-api"

/**
 * Decodes an endpoint's JSON request body refusing the fields it does not declare, at every
 * depth, so a misspelt field (`scope` for `scopes`, `webhookURL`) is a 400 naming it instead of
 * a default silently taken (docs/decisions.md, "Unknown fields are refused"). Records keep taking
 * any key, so a job's model-specific `input` is still checked by the model's own JSON Schema.
 * Every issue is collected, so the error names every unknown field, not only the first. An
 * annotation of each endpoint that takes a body (Effect 4 reads parse options per endpoint slot,
 * not off the schema); query parameters and headers stay lenient. A wrong value's reason shows
 * it (`Expected string, actual 1`), as it always did: Effect 4 keeps the input only when asked.
 */
export const strictBody: Context.Context<never> = Context.make(HttpApi.PayloadParseOptions, {
  onExcessProperty: "error",
  errors: "all",
  reportInput: true
})
