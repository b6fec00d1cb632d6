/**
 * A job's log pages go oldest first over the lines' places (1, 2, ...). The cursor is the place
 * of the last line shown, base64url-encoded as the job list's is, so clients treat it as opaque.
 */
export const encodeLogCursor = (seq: number): string => Buffer.from(JSON.stringify(["log", seq])).toString("base64url")

export const decodeLogCursor = (text: string): number | undefined => {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
    return Array.isArray(value) && value.length === 2 && value[0] === "log" && Number.isSafeInteger(value[1]) && value[1] >= 0
      ? value[1] as number
      : undefined
  } catch {
    return undefined
  }
}
