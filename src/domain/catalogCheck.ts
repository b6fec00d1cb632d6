import { Either, ParseResult, Schema } from "effect"
import { CatalogDocument } from "./catalog.js"
import { catalogProblems } from "./catalogRules.js"

const decodeDocument = Schema.decodeUnknownEither(CatalogDocument, { errors: "all", onExcessProperty: "error" })

/**
 * One reason per wrong field, by its path as the HTTP layer names a body's (`/models/0/slug: is
 * missing`), rather than the tree of the whole document's type that a ParseError's message is
 * (3 kB for one missing field).
 */
const shapeReasons = (error: ParseResult.ParseError): ReadonlyArray<string> =>
  ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => `/${issue.path.map(String).join("/")}: ${issue.message}`)

/**
 * A catalog document checked whole, as the engine checks it before storing: its shape, then
 * the references between its parts, unique ids and its JSON Schemas. Left holds every reason.
 */
export const checkCatalogDocument = (input: unknown): Either.Either<CatalogDocument, ReadonlyArray<string>> =>
  Either.match(decodeDocument(input), {
    onLeft: (error) => Either.left(shapeReasons(error)),
    onRight: (doc) => {
      const problems = catalogProblems(doc)
      return problems.length > 0 ? Either.left(problems) : Either.right(doc)
    }
  })
