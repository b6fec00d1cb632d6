import { Schema } from "effect"

/**
 * A JSON request body that refuses the fields it does not declare, at every depth, so a
 * misspelt field (`scope` for `scopes`, `webhookURL`) is a 400 naming it instead of a default
 * silently taken (docs/decisions.md, "Unknown fields are refused"). Records keep taking any key,
 * so a job's model-specific `input` is still checked by the model's own JSON Schema. Every issue
 * is collected, so the error names every unknown field, not only the first.
 */
export const strictBody = <S extends Schema.Annotable.All>(schema: S): Schema.Annotable.Self<S> =>
  schema.annotations({ parseOptions: { onExcessProperty: "error", errors: "all" } })
