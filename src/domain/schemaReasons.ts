import { SchemaIssue } from "effect"

/**
 * A wrong field's reason in the words the API has always given them (`is missing`, `is
 * unexpected`, `Expected ..., actual ...`), a filter's own message (a slug's form) left as it is.
 * Shared by the catalog check and the HTTP layer's refused requests, so `catalog validate` and
 * the server name a wrong field alike. The input shows only when the decode reported it
 * (`reportInput`).
 */
export const reasonLeafHook: SchemaIssue.LeafHook = (issue) =>
  issue._tag === "MissingKey"
    ? "is missing"
    : issue._tag === "UnexpectedKey"
    ? "is unexpected"
    : SchemaIssue.defaultLeafHook(issue).replace(", got ", ", actual ")
