import { codesWithStatus, errorComponent, errorStatuses } from "./errorEnvelope.js"

/**
 * How the OpenAPI document describes the credentials. The middleware reads them itself (see
 * authLayers.ts: `x-api-key` wins over `Authorization`, and a wrong scheme is its own error),
 * so the schemes are declared here rather than through HttpApiSecurity, whose middleware would
 * try one scheme after the other and lose the first one's error.
 */
const securitySchemes = {
  bearerKey: {
    type: "http",
    scheme: "bearer",
    description: "An API key: `Authorization: Bearer gjk_...`"
  },
  apiKeyHeader: {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "The same API key in `x-api-key` (wins when both headers are sent)"
  },
  adminToken: {
    type: "http",
    scheme: "bearer",
    description: "The operator's `ADMIN_TOKEN`: `Authorization: Bearer $ADMIN_TOKEN`"
  }
} as const

/** Either header carries the key. */
export const keySecurity = [{ bearerKey: [] }, { apiKeyHeader: [] }]
/** The public catalog: anonymous (`{}`), or a key that personalises it. */
export const optionalKeySecurity = [{}, ...keySecurity]
export const adminSecurity = [{ adminToken: [] }]

const retryAfter = {
  "Retry-After": { description: "Seconds to wait before retrying", schema: { type: "integer" } }
}

/** One response per status, its schema the envelope with that status's codes as an enum. */
const errorResponse = (status: number) => ({
  description: codesWithStatus(status).join(", "),
  ...(status === 429 || status === 503 ? { headers: retryAfter } : {}),
  content: { "application/json": { schema: { $ref: `#/components/schemas/${errorComponent(status)}` } } }
})

/**
 * Effect's generator adds a schema this engine never answers with: its own decode error on 400
 * (the error middleware answers decode errors in the envelope).
 */
const UNANSWERED = ["HttpApiDecodeError", "Issue", "PropertyKey"]

/**
 * `Schema.Unknown` becomes `{"$id": "/schemas/unknown"}` wherever it is used, and JSON Schema
 * validators (ajv) refuse a document with one `$id` many times; `{}` means the same.
 */
const withoutIds = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(withoutIds)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(Object.entries(value).filter(([key]) => key !== "$id").map(([key, v]) => [key, withoutIds(v)]))
}

type Operation = { responses: Record<string, unknown> }

/** The finishing touches of the generated document (an `OpenApi.Transform` of the API). */
export const finishDocument = (spec: Record<string, any>): Record<string, any> => {
  for (const path of Object.values(spec.paths as Record<string, Record<string, Operation>>)) {
    for (const operation of Object.values(path)) {
      for (const status of errorStatuses) {
        operation.responses[status] = errorResponse(status)
      }
    }
  }
  const schemas = Object.fromEntries(Object.entries(spec.components.schemas).filter(([name]) => !UNANSWERED.includes(name)))
  return withoutIds({ ...spec, components: { ...spec.components, schemas, securitySchemes } }) as Record<string, any>
}
