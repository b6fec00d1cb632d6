import { Either, Schema } from "effect"
import { CatalogDocument } from "./catalog.js"
import { catalogProblems } from "./catalogRules.js"

const decodeDocument = Schema.decodeUnknownEither(CatalogDocument, { errors: "all", onExcessProperty: "error" })

/**
 * A catalog document checked whole, as the engine checks it before storing: its shape, then
 * the references between its parts, unique ids and its JSON Schemas. Left holds every reason.
 */
export const checkCatalogDocument = (input: unknown): Either.Either<CatalogDocument, ReadonlyArray<string>> =>
  Either.match(decodeDocument(input), {
    onLeft: (error) => Either.left(error.message.split("\n")),
    onRight: (doc) => {
      const problems = catalogProblems(doc)
      return problems.length > 0 ? Either.left(problems) : Either.right(doc)
    }
  })
