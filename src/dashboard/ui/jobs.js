/** Jobs across accounts, filtered and refreshed while any is unfinished; one job with its outputs. */
import { html } from "htm/preact"
import { useState } from "preact/hooks"
import { seg, withQuery } from "./api.js"
import { isTerminal, localToIso, money, time } from "./format.js"
import { JobLog, ProviderProgress } from "./jobLog.js"
import { ErrorMessage, href, LoadMore, PageTitle, Status, useLoad, usePagedList, usePolling } from "./ui.js"

/** @typedef {import("./accounts.js").ViewProps} ViewProps */

const STATUSES = ["pending", "processing", "completed", "failed", "cancelled"]

/** Unfinished jobs are looked at this often; finished lists less often, so new jobs still show up. */
const BUSY_POLL_MS = 2_000
const IDLE_POLL_MS = 5_000

const FILTERS = ["accountId", "status", "model", "createdFrom", "createdBefore"]

/**
 * An ISO time as a datetime-local input's value (local time, to the minute).
 * @param {string | null} iso
 */
const isoToLocal = (iso) => {
  if (iso === null) return ""
  const d = new Date(iso)
  if (Number.isNaN(d.getTime())) return ""
  const pad = (/** @type {number} */ n) => String(n).padStart(2, "0")
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`
}

/** @param {{ query: URLSearchParams }} props */
const JobFilters = ({ query }) => {
  const submit = (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const form = new FormData(/** @type {HTMLFormElement} */ (event.currentTarget))
    const text = (/** @type {string} */ name) => String(form.get(name) ?? "").trim()
    location.hash = withQuery("#/jobs", {
      accountId: text("accountId"),
      status: text("status"),
      model: text("model"),
      createdFrom: localToIso(text("createdFrom")),
      createdBefore: localToIso(text("createdBefore"))
    })
  }
  return html`<form key=${query.toString()} class="filters" aria-label="Filter jobs" onSubmit=${submit}>
    <div><label for="f-account">Account id</label><input id="f-account" name="accountId" defaultValue=${query.get("accountId") ?? ""} /></div>
    <div><label for="f-status">Status</label>
      <select id="f-status" name="status">
        <option value="" selected=${!query.get("status")}>Any</option>
        ${STATUSES.map((s) => html`<option value=${s} selected=${query.get("status") === s}>${s}</option>`)}
      </select>
    </div>
    <div><label for="f-model">Model slug</label><input id="f-model" name="model" defaultValue=${query.get("model") ?? ""} /></div>
    <div><label for="f-from">Created from</label>
      <input id="f-from" name="createdFrom" type="datetime-local" defaultValue=${isoToLocal(query.get("createdFrom"))} /></div>
    <div><label for="f-before">Created before</label>
      <input id="f-before" name="createdBefore" type="datetime-local" defaultValue=${isoToLocal(query.get("createdBefore"))} /></div>
    <div class="actions">
      <button type="submit">Apply filters</button>
      <a href="#/jobs">Clear</a>
    </div>
  </form>`
}

/** @param {ViewProps} props */
export const JobsView = ({ api, notify, query }) => {
  const filters = Object.fromEntries(FILTERS.map((k) => [k, query.get(k) ?? undefined]))
  const list = usePagedList(api, withQuery("admin/jobs", filters), "jobs")
  const [auto, setAuto] = useState(true)
  const [checkedAt, setCheckedAt] = useState(/** @type {Date | null} */ (null))
  const busy = list.rows.some((j) => !isTerminal(j.status))

  const refresh = async () => {
    const before = new Map(list.rows.map((j) => [j.jobId, j.status]))
    const rows = await list.refresh()
    setCheckedAt(new Date())
    if (rows === undefined) return
    const changed = rows.filter((/** @type {any} */ j) => before.has(j.jobId) && before.get(j.jobId) !== j.status)
    const added = rows.filter((/** @type {any} */ j) => !before.has(j.jobId)).length
    const parts = [
      ...changed.map((/** @type {any} */ j) => `${j.jobId} is ${j.status}`),
      ...(added > 0 ? [`${added} new job${added === 1 ? "" : "s"}`] : [])
    ]
    if (parts.length > 0) notify(`${parts.join("; ")}.`)
  }
  usePolling(refresh, busy ? BUSY_POLL_MS : IDLE_POLL_MS, auto)

  return html`
    <${PageTitle}>Jobs<//>
    <${JobFilters} query=${query} />
    <div class="toolbar">
      <button type="button" onClick=${refresh}>Refresh</button>
      <label class="check"><input type="checkbox" checked=${auto} onChange=${() => setAuto(!auto)} /> Refresh automatically</label>
      <span class="muted">${auto ? (busy ? "Every 2 s while a job is unfinished." : "Every 5 s.") : "Paused."}
        ${checkedAt && ` Checked at ${checkedAt.toLocaleTimeString()}.`}</span>
    </div>
    <${ErrorMessage} error=${list.error} />
    <table>
      <caption>Jobs of every account, newest first</caption>
      <thead><tr>
        <th scope="col">Job</th><th scope="col">Account</th><th scope="col">Model</th><th scope="col">Status</th>
        <th scope="col" class="num">Progress</th><th scope="col" class="num">Cost</th><th scope="col">Created</th><th scope="col">Finished</th>
      </tr></thead>
      <tbody>
        ${list.rows.map((j) => html`<tr data-job=${j.jobId}>
          <td><a href=${href(`jobs/${seg(j.jobId)}`)}><code>${j.jobId}</code></a></td>
          <td><a href=${href(`accounts/${seg(j.accountId)}`)}><code>${j.accountId}</code></a></td>
          <td>${j.model}</td>
          <td><${Status} status=${j.status} />${j.failureType && html` <span class="muted">(${j.failureType})</span>`}</td>
          <td class="num">${j.progress}%</td>
          <td class="num">${money(j.costMicroCents)}</td>
          <td>${time(j.createdAt)}</td>
          <td>${time(j.completedAt)}</td>
        </tr>`)}
        ${!list.loading && list.rows.length === 0 && html`<tr><td colspan="8">No jobs match.</td></tr>`}
      </tbody>
    </table>
    <${LoadMore} list=${list} what="jobs" />
  `
}

const PICTURE = /\.(png|apng|jpe?g|gif|webp|avif)$/i

/**
 * How an output is previewed: by the extension of its file when that names a picture (the demo's
 * "videos" are animated PNGs), else by its type; only http(s) URLs are loaded or linked at all.
 * @param {{ url: string, type: string }} output
 */
const previewKind = (output) => {
  let url
  try {
    url = new URL(output.url)
  } catch {
    return "none"
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return "none"
  if (PICTURE.test(url.pathname)) return "image"
  return output.type === "video" || output.type === "audio" || output.type === "image" ? output.type : "link"
}

/** @param {{ output: any, n: number }} props */
const OutputPreview = ({ n, output }) => {
  const kind = previewKind(output)
  const label = `Output ${n}: ${output.type}`
  if (kind === "none") return html`<figure class="output"><figcaption>${label}: <code>${output.url}</code></figcaption></figure>`
  return html`<figure class="output">
    ${kind === "image" && html`<img src=${output.url} alt=${label} loading="lazy" />`}
    ${kind === "video" && html`<video src=${output.url} poster=${output.posterImage ?? undefined} controls preload="metadata" aria-label=${label}></video>`}
    ${kind === "audio" && html`<audio src=${output.url} controls preload="metadata" aria-label=${label}></audio>`}
    <figcaption><a href=${output.url} target="_blank" rel="noopener noreferrer">${label} (opens the file)</a></figcaption>
  </figure>`
}

/** @param {ViewProps & { id: string }} props */
export const JobView = ({ api, id }) => {
  const job = useLoad(() => api("GET", `admin/jobs/${seg(id)}`), [id])
  const data = job.data
  usePolling(job.reload, BUSY_POLL_MS, data !== undefined && !isTerminal(data.status))
  if (data === undefined) {
    return html`<${PageTitle}>Job ${id}<//>${job.error ? html`<${ErrorMessage} error=${job.error} />` : html`<p>Loading…</p>`}`
  }
  return html`
    <${PageTitle}>Job <code>${data.jobId}</code><//>
    <p role="status" aria-live="polite">Status: <${Status} status=${data.status} />
      ${!isTerminal(data.status) && html` <span class="muted">(refreshing every 2 s)</span>`}</p>
    <label for="job-progress">Progress</label>
    <progress id="job-progress" max="100" value=${data.progress}>${data.progress}%</progress>
    <${ProviderProgress} value=${data.providerProgress} />
    <${ErrorMessage} error=${job.error} />
    ${data.error && html`<div class="error"><p><strong>${data.error.code}</strong>: ${data.error.message}</p>
      <p>Failure type: <code>${data.error.type}</code>; ${data.error.retryable
        ? "retryable: the same submit would likely succeed later."
        : "not retryable: the same submit would fail again."}</p></div>`}
    ${data.outputs && html`<section aria-labelledby="outputs">
      <h2 id="outputs">Outputs</h2>
      <div class="outputs">${data.outputs.map((/** @type {any} */ o, /** @type {number} */ i) => html`<${OutputPreview} output=${o} n=${i + 1} />`)}</div>
    </section>`}
    <${JobLog} api=${api} id=${data.jobId} running=${!isTerminal(data.status)} />
    <h2>Details</h2>
    <dl class="summary">
      <dt>Account</dt><dd><a href=${href(`accounts/${seg(data.accountId)}`)}><code>${data.accountId}</code></a></dd>
      <dt>Model</dt><dd>${data.model} (version ${data.version})</dd>
      <dt>Cost</dt><dd>${money(data.costMicroCents)}</dd>
      <dt>Attempts</dt><dd>${data.attempts}</dd>
      <dt>Request id</dt><dd><code>${data.requestId}</code></dd>
      <dt>Created</dt><dd>${time(data.createdAt)}</dd>
      <dt>Started</dt><dd>${time(data.startedAt)}</dd>
      <dt>Finished</dt><dd>${time(data.completedAt)}</dd>
      <dt>Estimated completion</dt><dd>${time(data.estimatedCompletionTime)}</dd>
      <dt>Webhook URL</dt><dd>${data.webhookUrl ?? "—"}</dd>
    </dl>
    <h2>Input</h2>
    <pre class="json">${JSON.stringify(data.input, null, 2)}</pre>
  `
}
