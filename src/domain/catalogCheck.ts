import { Result, Schema, SchemaIssue } from "effect"
import { CatalogDocument } from "./catalog.js"
import { catalogProblems } from "./catalogRules.js"
import { reasonLeafHook } from "./schemaReasons.js"

// The input is reported so a wrong value's reason shows it (`actual "x"`), as the reasons always did.
const decodeDocument = Schema.decodeUnknownResult(CatalogDocument, { errors: "all", onExcessProperty: "error", reportInput: true })

const formatReasons = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook: reasonLeafHook })

/**
 * One reason per wrong field, by its path as the HTTP layer names a body's (`/models/0/slug: is
 * missing`), rather than the tree of the whole document's type that a SchemaError's message is
 * (3 kB for one missing field).
 */
const shapeReasons = (error: Schema.SchemaError): ReadonlyArray<string> =>
  formatReasons(error.issue).issues.map((issue) => `/${(issue.path ?? []).map(String).join("/")}: ${issue.message}`)

/**
 * A catalog document checked whole, as the engine checks it before storing: its shape, then
 * the references between its parts, unique ids and its JSON Schemas. The failure holds every reason.
 */
export const checkCatalogDocument = (input: unknown): Result.Result<CatalogDocument, ReadonlyArray<string>> =>
  Result.match(decodeDocument(input), {
    onFailure: (error) => Result.fail(shapeReasons(error)),
    onSuccess: (doc) => {
      const problems = catalogProblems(doc)
      return problems.length > 0 ? Result.fail(problems) : Result.succeed(doc)
    }
  })
