import { hasNul } from "./limits.js"

/**
 * The job list is newest first over the keyset (createdAt, jobId). The cursor is that pair of
 * the last item shown, base64url-encoded so clients treat it as opaque.
 * A cursor carrying a NUL is not one the API issued (ids never hold one), and no store could
 * compare it alike.
 */
export interface JobCursor {
  readonly createdAt: number
  readonly id: string
}

export const encodeCursor = (cursor: JobCursor): string =>
  Buffer.from(JSON.stringify([cursor.createdAt, cursor.id])).toString("base64url")

export const decodeCursor = (text: string): JobCursor | undefined => {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
    if (
      Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === "string" &&
      !hasNul(value[1])
    ) {
      return { createdAt: value[0], id: value[1] }
    }
    return undefined
  } catch {
    return undefined
  }
}

/** True when (createdAt, id) comes after the cursor in newest-first order. */
export const isAfterCursor = (item: JobCursor, cursor: JobCursor): boolean =>
  item.createdAt < cursor.createdAt || (item.createdAt === cursor.createdAt && item.id < cursor.id)
