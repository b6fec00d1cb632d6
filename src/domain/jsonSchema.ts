import { Ajv, type ErrorObject, type ValidateFunction } from "ajv"
import formatsPlugin from "ajv-formats"

/** ajv-formats ships CommonJS whose default export arrives under `.default` in ESM. */
const addFormats = ((formatsPlugin as unknown as { default?: typeof formatsPlugin }).default ?? formatsPlugin) as
  unknown as (ajv: Ajv) => Ajv

const ajv = addFormats(new Ajv({ allErrors: true, strict: false }))

export interface SchemaProblem {
  readonly path: string
  readonly message: string
}

/** Compiles a model's input schema once; throws a readable message for an invalid schema. */
export const compileSchema = (schema: Record<string, unknown>): ValidateFunction => ajv.compile(schema)

export const schemaCompileError = (schema: Record<string, unknown>): string | undefined => {
  try {
    ajv.compile(schema)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

/** Turns ajv's errors into JSON-pointer paths a client can act on. */
export const problemsOf = (errors: ReadonlyArray<ErrorObject> | null | undefined): ReadonlyArray<SchemaProblem> =>
  (errors ?? []).map((e) => {
    const missing = e.keyword === "required" ? `/${String((e.params as { missingProperty: string }).missingProperty)}` : ""
    const extra = e.keyword === "additionalProperties"
      ? `/${String((e.params as { additionalProperty: string }).additionalProperty)}`
      : ""
    return { path: `${e.instancePath}${missing}${extra}` || "/", message: e.message ?? e.keyword }
  })
