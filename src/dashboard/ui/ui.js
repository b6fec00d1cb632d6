/** Pieces every view uses: loading state, messages, polling, paged lists, headings that take focus. */
import { html } from "htm/preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"

/**
 * An error of the admin API as a message, with what the envelope adds.
 * @param {{ error: any }} props
 */
export const ErrorMessage = ({ error }) => {
  if (error === null || error === undefined) return null
  const details = error.details ?? {}
  /** @type {Array<string>} */
  const lines = [
    ...(Array.isArray(details.reasons) ? details.reasons : []),
    ...(Array.isArray(details.errors) ? details.errors.map((/** @type {any} */ e) => `${e.path}: ${e.message}`) : []),
    ...(Array.isArray(details.invalid) ? details.invalid.map((/** @type {string} */ e) => `Invalid: ${e}`) : [])
  ]
  return html`<div class="error" role="alert">
    <p><strong>${error.code ? `${error.code}: ` : ""}</strong>${error.message}</p>
    ${lines.length > 0 && html`<ul class="reasons">${lines.map((line) => html`<li>${line}</li>`)}</ul>`}
    ${error.requestId && html`<p class="muted">Request ${error.requestId}</p>`}
  </div>`
}

/**
 * A page's heading, focused when the page opens so keyboard and screen reader users land on it.
 * @param {{ children: any }} props
 */
export const PageTitle = ({ children }) => {
  const ref = useRef(/** @type {HTMLHeadingElement | null} */ (null))
  useEffect(() => ref.current?.focus(), [])
  return html`<h1 tabindex="-1" ref=${ref}>${children}</h1>`
}

/**
 * Loads with `load` when `key` changes; `reload` loads again, keeping what is shown meanwhile.
 * @template T
 * @param {() => Promise<T>} load
 * @param {ReadonlyArray<unknown>} keys
 */
export const useLoad = (load, keys) => {
  const [state, setState] = useState(/** @type {{ data: T | undefined, error: any, loading: boolean }} */ ({ data: undefined, error: null, loading: true }))
  const latest = useRef(0)
  const reload = useCallback(async () => {
    const ticket = ++latest.current
    setState((s) => ({ ...s, loading: true }))
    try {
      const data = await load()
      if (ticket === latest.current) setState({ data, error: null, loading: false })
    } catch (error) {
      if (ticket === latest.current) setState((s) => ({ ...s, error, loading: false }))
    }
  }, keys)
  useEffect(() => void reload(), [reload])
  return { ...state, reload, setData: (/** @type {T} */ data) => setState((s) => ({ ...s, data })) }
}

/**
 * Runs `tick` every `ms` while `active` and the tab is visible; one run at a time.
 * @param {() => Promise<unknown>} tick
 * @param {number} ms
 * @param {boolean} active
 */
export const usePolling = (tick, ms, active) => {
  const current = useRef(tick)
  current.current = tick
  useEffect(() => {
    if (!active) return undefined
    let running = false
    const id = setInterval(async () => {
      if (running || document.hidden) return
      running = true
      try {
        await current.current()
      } finally {
        running = false
      }
    }, ms)
    return () => clearInterval(id)
  }, [ms, active])
}

/**
 * A list the API pages with nextCursor: the first page, then more on demand; `refresh` loads as
 * many rows as are shown again, so a refresh keeps the operator's place.
 * @param {import("./api.js").Call} api
 * @param {string} path the list's path with its filters, without limit and cursor
 * @param {string} key the answer's field holding the rows
 */
export const usePagedList = (api, path, key) => {
  const [rows, setRows] = useState(/** @type {Array<any>} */ ([]))
  const [next, setNext] = useState(/** @type {string | null} */ (null))
  const [error, setError] = useState(/** @type {any} */ (null))
  const [loading, setLoading] = useState(true)
  const shown = useRef(0)
  const sep = path.includes("?") ? "&" : "?"

  const load = useCallback(async (/** @type {number} */ limit) => {
    try {
      const page = await api("GET", `${path}${sep}limit=${limit}`)
      setRows(page[key])
      shown.current = page[key].length
      setNext(page.hasMore ? page.nextCursor : null)
      setError(null)
      return page[key]
    } catch (e) {
      setError(e)
      return undefined
    } finally {
      setLoading(false)
    }
  }, [api, path])

  useEffect(() => {
    setLoading(true)
    void load(20)
  }, [load])

  const more = async () => {
    if (next === null) return
    try {
      const page = await api("GET", `${path}${sep}limit=20&cursor=${encodeURIComponent(next)}`)
      setRows((r) => [...r, ...page[key]])
      shown.current += page[key].length
      setNext(page.hasMore ? page.nextCursor : null)
    } catch (e) {
      setError(e)
    }
  }

  const refresh = () => load(Math.min(100, Math.max(20, shown.current)))
  return { rows, setRows, error, loading, hasMore: next !== null, more, refresh }
}

/**
 * "Load more" under a paged table.
 * @param {{ list: { hasMore: boolean, more: () => Promise<void> }, what: string }} props
 */
export const LoadMore = ({ list, what }) =>
  list.hasMore ? html`<p><button type="button" onClick=${list.more}>Load more ${what}</button></p>` : null

/**
 * A status as a word with a colour; the word carries the meaning.
 * @param {{ status: string }} props
 */
export const Status = ({ status }) => html`<span class=${`status status-${status}`}>${status}</span>`

/**
 * The hash link of a view.
 * @param {string} path
 */
export const href = (path) => `#/${path}`
