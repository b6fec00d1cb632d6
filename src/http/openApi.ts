import { type Schema, SchemaAST } from "effect"
import type { HttpApiMiddleware } from "effect/http-api"
import type { RefusalAnswer } from "../domain/refusal.js"
import { anyRequestRefusals, errorComponent, refusalAnswerOf, refusalClasses } from "./errorEnvelope.js"
import { DocumentedAs } from "./schemas/paging.js"

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

/** The codes of some refusals answered with one status, in the order given. */
const codesOf = (answers: ReadonlyArray<RefusalAnswer>, status: number): ReadonlyArray<string> => [
  ...new Set(answers.filter((a) => a.status === status).map((a) => a.code))
]

/** The statuses of some refusals, ascending. */
const statusesOf = (answers: ReadonlyArray<RefusalAnswer>): ReadonlyArray<number> =>
  [...new Set(answers.map((a) => a.status))].sort((a, b) => a - b)

/** An operation's answer with one error status: the codes it may answer with there, the envelope of every code of that status. */
const errorResponse = (status: number, codes: ReadonlyArray<string>) => ({
  description: codes.join(", "),
  ...(status === 429 || status === 503 ? { headers: retryAfter } : {}),
  content: { "application/json": { schema: { $ref: `#/components/schemas/${errorComponent(status)}` } } }
})

/** The envelope of one status with its codes as an enum: one component per status, so a generated client knows every code it may meet and where. */
const errorEnvelopeSchema = (codes: ReadonlyArray<string>) => ({
  type: "object",
  required: ["success", "error", "requestId"],
  properties: {
    success: { type: "boolean", enum: [false] },
    error: {
      type: "object",
      required: ["code", "message", "details"],
      properties: {
        code: { type: "string", enum: codes },
        message: { type: "string" },
        details: { type: "object", required: [], properties: {}, additionalProperties: { title: "unknown" } }
      },
      additionalProperties: false
    },
    requestId: { type: "string" }
  },
  additionalProperties: false,
  description: codes.join(", ")
})

/** The refusals some declared error schemas (an endpoint's `refusing`, a middleware's) stand for; `ApiErrors` are unmarked. */
const declaredAnswers = (schemas: Iterable<Schema.Top>): ReadonlyArray<RefusalAnswer> =>
  [...schemas].flatMap((schema) => {
    const answer = refusalAnswerOf(schema)
    return answer === undefined ? [] : [answer]
  })

/** What the document reads of a group of the API: its endpoints' declared errors and middlewares. */
interface DocumentedGroup {
  readonly identifier: string
  readonly endpoints: Readonly<Record<string, {
    readonly identifier: string
    readonly query: Schema.Top | undefined
    readonly error: ReadonlySet<Schema.Top>
    readonly middlewares: ReadonlySet<unknown>
  }>>
}

/**
 * What each operation may answer, by its operationId (`group.endpoint`): what any request may be
 * answered, then what its middleware declares (its key or token check), then what the endpoint
 * declares (`groups` are the API's). The API itself declares every refusal (so any can be encoded and read), which the
 * document leaves out: it lists what the operation's own rules raise.
 */
const operationAnswers = (groups: ReadonlyArray<DocumentedGroup>): Map<string, ReadonlyArray<RefusalAnswer>> => {
  const byOperation = new Map<string, ReadonlyArray<RefusalAnswer>>()
  for (const group of groups) {
    for (const endpoint of Object.values(group.endpoints)) {
      // An endpoint's middlewares are typed as the services' keys; the keys are HttpApiMiddleware's classes, with their errors.
      const middlewares = [...endpoint.middlewares] as ReadonlyArray<unknown> as ReadonlyArray<HttpApiMiddleware.AnyService>
      byOperation.set(`${group.identifier}.${endpoint.identifier}`, [
        ...anyRequestRefusals,
        ...middlewares.flatMap((middleware) => declaredAnswers(middleware.error)),
        ...declaredAnswers(endpoint.error)
      ])
    }
  }
  return byOperation
}

/**
 * Effect's generator documents a number as its JSON codec writes it, "NaN" and "Infinity" as
 * strings beside the number; the API takes and answers plain JSON numbers only (Api.ts,
 * `disableCodecs`), so the document says so.
 */
const NON_FINITE = JSON.stringify({ type: "string", enum: ["Infinity", "-Infinity", "NaN"] })

/**
 * An `anyOf`'s members as the API means them: each once (an optional field that may also be
 * null documents null twice, its codec's null for undefined and its own), and numbers without
 * their codec's strings (NON_FINITE).
 */
const meantMembers = (members: ReadonlyArray<unknown>): ReadonlyArray<unknown> => {
  const texts = members.map((member) => JSON.stringify(member))
  const numbers = texts.includes(JSON.stringify({ type: "number" }))
  return members.filter((_, i) => texts.indexOf(texts[i]!) === i && !(numbers && texts[i] === NON_FINITE))
}

/**
 * Every object of fixed fields closed (`additionalProperties: false`), as the bodies are decoded
 * (schemas/strictBody.ts) and as the answers are made: a generated client then knows no other
 * field comes. Objects that say otherwise (records) keep what they say. An `anyOf` as the API
 * means it (`meantMembers`).
 */
const closed = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(closed)
  if (typeof value !== "object" || value === null) return value
  const object = Object.fromEntries(Object.entries(value).map(([key, v]) => [key, closed(v)]))
  const members = object["anyOf"]
  if (Array.isArray(members)) {
    const meant = meantMembers(members)
    if (meant.length === 1) {
      const { anyOf: _, ...rest } = object
      return { ...(meant[0] as Record<string, unknown>), ...rest }
    }
    object["anyOf"] = meant
  }
  return object["type"] === "object" && object["properties"] !== undefined && !("additionalProperties" in object)
    ? { ...object, additionalProperties: false }
    : object
}

/**
 * What a parameter's schema says the document shows, looking through `optional`'s union with
 * undefined. Read with `resolveAt`: a schema with checks (PageLimit's finite number) keeps its
 * annotations on its last check.
 */
const documentedAsOf = (ast: SchemaAST.AST): Record<string, unknown> | undefined => {
  const own = SchemaAST.resolveAt<Record<string, unknown>>(DocumentedAs)(ast)
  if (own !== undefined || !SchemaAST.isUnion(ast)) return own
  return ast.types.map(documentedAsOf).find((schema) => schema !== undefined)
}

/**
 * The query parameters whose schema says what the document shows for them (schemas/paging.ts
 * `documentedAs`), by operationId and name: the generator shows a query parameter as the string
 * it is sent as.
 */
const documentedParameters = (groups: ReadonlyArray<DocumentedGroup>): Map<string, Record<string, unknown>> => {
  const documented = new Map<string, Record<string, unknown>>()
  for (const group of groups) {
    for (const endpoint of Object.values(group.endpoints)) {
      const ast = endpoint.query?.ast
      if (ast === undefined || !SchemaAST.isObjects(ast)) continue
      for (const property of ast.propertySignatures) {
        const schema = documentedAsOf(property.type)
        if (schema !== undefined) documented.set(`${group.identifier}.${endpoint.identifier} ${String(property.name)}`, schema)
      }
    }
  }
  return documented
}

type Parameter = { name: string; in: string; schema: Record<string, unknown> }

type Operation = { operationId: string; responses: Record<string, unknown>; parameters: Array<Parameter> }

/** The finishing touches of the generated document (an `OpenApi.Transform` of the API). */
export const finishDocument = (spec: Record<string, any>, groups: ReadonlyArray<DocumentedGroup>): Record<string, any> => {
  const answers = operationAnswers(groups)
  const documented = documentedParameters(groups)
  const answered = new Set<number>()
  for (const path of Object.values(spec.paths as Record<string, Record<string, Operation>>)) {
    for (const operation of Object.values(path)) {
      for (const parameter of operation.parameters) {
        const schema = parameter.in === "query" ? documented.get(`${operation.operationId} ${parameter.name}`) : undefined
        const description = parameter.schema["description"]
        if (schema !== undefined) parameter.schema = description === undefined ? schema : { ...schema, description }
      }
      const own = answers.get(operation.operationId) ?? anyRequestRefusals
      for (const status of Object.keys(operation.responses)) {
        if (Number(status) >= 400) delete operation.responses[status]
      }
      for (const status of statusesOf(own)) {
        operation.responses[status] = errorResponse(status, codesOf(own, status))
        answered.add(status)
      }
    }
  }
  // One component per status some operation answers (411 is the upload PUT's alone, which the document leaves out).
  const errorSchemas = Object.fromEntries(
    statusesOf(refusalClasses).filter((status) => answered.has(status)).map((status) => [errorComponent(status), errorEnvelopeSchema(codesOf(refusalClasses, status))])
  )
  const schemas = { ...spec.components.schemas, ...errorSchemas }
  return closed({ ...spec, components: { ...spec.components, schemas, securitySchemes } }) as Record<string, any>
}
