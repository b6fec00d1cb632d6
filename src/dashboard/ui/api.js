/**
 * The admin API as the dashboard calls it: relative to the page, so under any base path
 * (`<base>/dashboard` calls `<base>/admin/...`), with the admin token as a Bearer header.
 */

/** The engine's root: the page is `<base>/dashboard`, so "." is `<base>/`. */
export const apiRoot = new URL(".", document.baseURI)

/** An answer in the engine's error envelope, or a failure to reach it at all (status 0). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {{ code?: string, message?: string, details?: any }} error
   * @param {string | null} requestId
   */
  constructor(status, error, requestId) {
    super(error.message ?? `HTTP ${status}`)
    this.status = status
    this.code = error.code ?? "NETWORK_ERROR"
    this.details = error.details ?? {}
    this.requestId = requestId
  }
}

/**
 * @typedef {(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<any>} Call
 */

/**
 * A caller of the admin API with this token. `onRefused` runs when the token is refused (401),
 * so the dashboard can sign out.
 * @param {string} token
 * @param {(error: ApiError) => void} [onRefused]
 * @returns {Call}
 */
export const adminApi = (token, onRefused) => async (method, path, body, headers = {}) => {
  let response
  try {
    response = await fetch(new URL(path, apiRoot), {
      method,
      cache: "no-store",
      headers: { ...headers, authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  } catch {
    throw new ApiError(0, { message: "The server cannot be reached" }, null)
  }
  const text = await response.text()
  let data = null
  try {
    data = text === "" ? null : JSON.parse(text)
  } catch {
    data = null
  }
  if (response.ok) return data
  const error = new ApiError(response.status, data?.error ?? {}, data?.requestId ?? response.headers.get("x-request-id"))
  if (response.status === 401) onRefused?.(error)
  throw error
}

/**
 * A path with a query of the non-empty values only.
 * @param {string} path
 * @param {Record<string, string | number | undefined | null>} query
 */
export const withQuery = (path, query) => {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") params.set(k, String(v))
  const text = params.toString()
  return text === "" ? path : `${path}?${text}`
}

/** @param {string} id */
export const seg = (id) => encodeURIComponent(id)
