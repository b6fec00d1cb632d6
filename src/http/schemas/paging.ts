import { Schema } from "effect"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../../domain/limits.js"

/** The annotation holding what the OpenAPI document says a query parameter must hold (openApi.ts). */
export const DocumentedAs = "genjobs/http/DocumentedAs"

/**
 * What the OpenAPI document says a query parameter must hold, without checking it. A query
 * parameter is documented as its string encoding, so this takes its place there.
 */
export const documentedAs = (schema: Record<string, unknown>) => ({ [DocumentedAs]: schema })

/**
 * Query parameters arrive as strings and are decoded as such (a page size that is no finite number
 * does not decode); the annotations tell the OpenAPI document what they must hold. The values are
 * checked by the service (services/paging.ts), which refuses bad ones with VALIDATION_ERROR naming
 * the field.
 */
export const PageLimit = Schema.FiniteFromString.annotate(
  documentedAs({ type: "integer", minimum: 1, maximum: MAX_PAGE_SIZE, default: DEFAULT_PAGE_SIZE })
)

/** A status filter: any string decodes, the document lists the values the service accepts. */
export const StatusFilter = (statuses: ReadonlyArray<string>) => Schema.String.annotate(documentedAs({ type: "string", enum: statuses }))
