import { Effect } from "effect"
import { decodeCursor, encodeCursor, type JobCursor } from "../domain/cursor.js"
import { ValidationError } from "../domain/errors.js"
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "../domain/limits.js"

/** Checks a list request's `limit`, `status` and `cursor`; bad values are refused, not corrected. */
export const readPageRequest = <S extends string>(
  request: { readonly limit?: number | undefined; readonly cursor?: string | undefined; readonly status?: string | undefined },
  statuses: ReadonlyArray<S>
): Effect.Effect<{ readonly limit: number; readonly after: JobCursor | undefined; readonly status: S | undefined }, ValidationError> => {
  const limit = request.limit ?? DEFAULT_PAGE_SIZE
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    return Effect.fail(new ValidationError({ message: `limit must be an integer from 1 to ${MAX_PAGE_SIZE}`, details: { field: "limit" } }))
  }
  if (request.status !== undefined && !statuses.includes(request.status as S)) {
    return Effect.fail(new ValidationError({ message: `status must be one of ${statuses.join(", ")}`, details: { field: "status" } }))
  }
  const after = request.cursor === undefined ? undefined : decodeCursor(request.cursor)
  if (request.cursor !== undefined && after === undefined) {
    return Effect.fail(new ValidationError({ message: "cursor is not a cursor this API issued", details: { field: "cursor" } }))
  }
  return Effect.succeed({ limit, after, status: request.status as S | undefined })
}

/** Stores answer up to limit + 1 rows newest first; the extra row says more follow. */
export const toPage = <A extends { readonly createdAt: number; readonly id: string }>(rows: ReadonlyArray<A>, limit: number) => {
  const items = rows.slice(0, limit)
  const hasMore = rows.length > limit
  const last = items[items.length - 1]
  return {
    items,
    hasMore,
    nextCursor: hasMore && last !== undefined ? encodeCursor({ createdAt: last.createdAt, id: last.id }) : null
  }
}
