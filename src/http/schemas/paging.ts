import { Schema } from "effect"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../../domain/limits.js"

/**
 * What the OpenAPI document says a value must hold, without checking it: a filter that always
 * passes and contributes `fragment` to the JSON Schema.
 */
export const documentedAs = (fragment: Record<string, unknown>) =>
  Schema.makeFilter<unknown>(() => true, { toJsonSchema: () => fragment })

/**
 * Query parameters arrive as strings and are decoded as such; the annotations tell the OpenAPI
 * document what they must hold. The values are checked by the service (services/paging.ts),
 * which refuses bad ones with VALIDATION_ERROR naming the field.
 */
export const PageLimit = Schema.NumberFromString.check(
  documentedAs({ type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })
)

/** A status filter: any string decodes, the document lists the values the service accepts. */
export const StatusFilter = (statuses: ReadonlyArray<string>) => Schema.String.check(documentedAs({ type: "string", enum: statuses }))
