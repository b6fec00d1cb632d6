import { SchemaAST, SchemaIssue } from "effect"

/** The keys (or tuple indexes) a refused extra field could have been, as `"name" | "scopes"`. */
const expectedKeys = (ast: SchemaAST.AST): string =>
  SchemaAST.isObjects(ast)
    ? ast.propertySignatures.map((p) => typeof p.name === "string" ? JSON.stringify(p.name) : String(p.name)).join(" | ")
    : SchemaAST.isArrays(ast)
    ? ast.elements.map((_, i) => i).join(" | ")
    : ""

/**
 * A wrong field's reason in the words the API has always given them (`is missing`, `is
 * unexpected, expected: "a" | "b"`, `Expected ..., actual ...`), a filter's own message (a slug's
 * form) left as it is. Shared by the catalog check and the HTTP layer's refused requests, so
 * `catalog validate` and the server name a wrong field alike. The input shows only when the
 * decode reported it (`reportInput`).
 */
export const reasonLeafHook: SchemaIssue.LeafHook = (issue) => {
  if (issue._tag === "MissingKey") return "is missing"
  if (issue._tag === "UnexpectedKey") {
    const expected = expectedKeys(issue.ast)
    return expected === "" ? "is unexpected" : `is unexpected, expected: ${expected}`
  }
  return SchemaIssue.defaultLeafHook(issue).replace(", got ", ", actual ")
}
