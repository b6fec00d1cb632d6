import { Result } from "effect"
import { ValidationError } from "../domain/errors.js"

/** The entity tag of a catalog revision: `"7"`. */
export const revisionTag = (revision: number): string => `"${revision}"`

/**
 * The revision an `If-Match` header asks for: undefined when absent or `*` (any stored catalog
 * will do). One strong entity tag naming a revision is taken; anything else is refused rather
 * than guessed at, since a precondition that silently passed would undo another's change.
 */
export const ifMatchRevision = (header: string | undefined): Result.Result<number | undefined, ValidationError> => {
  if (header === undefined) return Result.succeed(undefined)
  const value = header.trim()
  if (value === "*") return Result.succeed(undefined)
  const match = /^"(0|[1-9][0-9]{0,14})"$/.exec(value)
  if (match === null) {
    return Result.fail(new ValidationError({
      message: "If-Match must be one catalog revision as an entity tag, such as \"7\" (quotes included), or *",
      details: { errors: [{ path: "/headers/if-match", message: "must be one strong entity tag such as \"7\", or *" }] }
    }))
  }
  return Result.succeed(Number(match[1]))
}
