/** A job's provider progress and log lines, on the job's page. */
import { html } from "htm/preact"
import { useCallback, useEffect, useRef, useState } from "preact/hooks"
import { seg } from "./api.js"
import { time } from "./format.js"
import { ErrorMessage, usePolling } from "./ui.js"

/** A running job's log is asked again this often, from where the last read ended. */
const LOG_POLL_MS = 2_000
const PAGE = 100

/**
 * The provider's own progress beside the spec's: null until the provider reported any.
 * @param {{ value: number | null }} props
 */
export const ProviderProgress = ({ value }) => html`
  <label for="job-provider-progress">Provider's progress</label>
  ${value === null
    ? html`<p id="job-provider-progress" class="muted">Not reported by this provider.</p>`
    : html`<progress id="job-provider-progress" max="100" value=${value}>${value}%</progress> <span>${value}%</span>`}
`

/**
 * The job's log lines (redacted as stored), read page by page and followed with `nextCursor`
 * while the job runs: each read asks only for the lines past the last one shown.
 * @param {{ api: import("./api.js").Call, id: string, running: boolean }} props
 */
export const JobLog = ({ api, id, running }) => {
  const [lines, setLines] = useState(/** @type {Array<{ seq: number, at: string, line: string }>} */ ([]))
  const [error, setError] = useState(/** @type {any} */ (null))
  const [loaded, setLoaded] = useState(false)
  // The cursor past the last line shown; null once the job ended and nothing follows.
  const cursor = useRef(/** @type {string | null | undefined} */ (undefined))
  // One read at a time (two from the same cursor would show their lines twice); a read asked
  // for meanwhile runs right after, so the read at the job's end is never skipped.
  const reading = useRef(false)
  const again = useRef(false)

  const readOn = useCallback(async () => {
    if (reading.current) {
      again.current = true
      return
    }
    reading.current = true
    try {
      do {
        again.current = false
        while (cursor.current !== null) {
          const after = cursor.current === undefined ? "" : `&cursor=${encodeURIComponent(cursor.current)}`
          const page = await api("GET", `admin/jobs/${seg(id)}/logs?limit=${PAGE}${after}`)
          if (page.lines.length > 0) setLines((shown) => [...shown, ...page.lines])
          cursor.current = page.nextCursor
          if (!page.hasMore) break
        }
      } while (again.current)
      setError(null)
    } catch (e) {
      setError(e)
    } finally {
      reading.current = false
      setLoaded(true)
    }
  }, [api, id])

  useEffect(() => {
    cursor.current = undefined
    setLines([])
    setLoaded(false)
    void readOn()
  }, [readOn])
  // Once the job ends, one more read takes the lines logged since the last one.
  useEffect(() => {
    if (!running && loaded) void readOn()
  }, [running])
  usePolling(readOn, LOG_POLL_MS, running)

  return html`<section aria-labelledby="job-log">
    <h2 id="job-log">Provider log</h2>
    <${ErrorMessage} error=${error} />
    ${loaded && lines.length === 0 && html`<p class="muted">No log lines${running ? " yet" : ""}.</p>`}
    ${lines.length > 0 && html`<ol class="log" aria-label="Provider log lines">
      ${lines.map((l) => html`<li key=${l.seq} value=${l.seq}><span class="muted">${time(l.at)}</span> <code>${l.line}</code></li>`)}
    </ol>`}
  </section>`
}
