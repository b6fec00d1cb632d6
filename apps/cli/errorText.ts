/** A command's failure as it is printed: the API's error (or the CLI's own code) and where to find it. */
export interface Failure {
  readonly code: string
  readonly message: string
  readonly status?: number | undefined
  readonly requestId?: string | undefined
  readonly details?: unknown
}

/**
 * The lines under the error: a refused catalog's reasons, or the fields of a request body the
 * server's schema refused (`/models/0/slug: is missing`), as the catalog check names them too.
 */
const reasonsOf = (details: unknown): ReadonlyArray<string> => {
  const { reasons, errors } = (details ?? {}) as { reasons?: unknown; errors?: unknown }
  if (Array.isArray(reasons)) return reasons.map(String)
  if (Array.isArray(errors)) return errors.map((e: { path?: unknown; message?: unknown }) => `${String(e.path)}: ${String(e.message)}`)
  return []
}

/** What a failure prints on stderr: a line with its code and request id, and its reasons; or JSON. */
export const errorText = (json: boolean, error: Failure): string =>
  json
    ? JSON.stringify({
      error: {
        code: error.code,
        message: error.message,
        ...(error.status === undefined ? {} : { status: error.status }),
        ...(error.requestId === undefined ? {} : { requestId: error.requestId }),
        ...(error.details === undefined ? {} : { details: error.details })
      }
    })
    : [
      `error: ${error.code}: ${error.message}${error.requestId === undefined ? "" : ` (request ${error.requestId})`}`,
      ...reasonsOf(error.details).map((r) => `  - ${r}`)
    ].join("\n")
