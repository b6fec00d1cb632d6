/** Webhook deliveries across accounts, with their attempts; failed ones can be sent again. */
import { html } from "htm/preact"
import { useState } from "preact/hooks"
import { seg, withQuery } from "./api.js"
import { time } from "./format.js"
import { ErrorMessage, href, LoadMore, PageTitle, Status, usePagedList, usePolling } from "./ui.js"

/** @typedef {import("./accounts.js").ViewProps} ViewProps */

/** @param {{ attempts: Array<any> }} props */
const Attempts = ({ attempts }) =>
  attempts.length === 0 ? html`<span class="muted">none yet</span>` : html`<details>
    <summary>${attempts.length} attempt${attempts.length === 1 ? "" : "s"}</summary>
    <ol class="attempts">
      ${attempts.map((a) => html`<li>
        Attempt ${a.attempt} at ${time(a.at)}: ${a.statusCode === null ? a.error : `HTTP ${a.statusCode}`} in ${a.durationMs} ms
        ${a.responseBody && html`<pre>${a.responseBody}</pre>`}
      </li>`)}
    </ol>
  </details>`

/** @param {ViewProps} props */
export const DeliveriesView = ({ api, notify, query }) => {
  const accountId = query.get("accountId") ?? ""
  const status = query.get("status") ?? ""
  const list = usePagedList(api, withQuery("admin/webhooks/deliveries", { accountId, status }), "deliveries")
  const [error, setError] = useState(/** @type {any} */ (null))
  const pending = list.rows.some((d) => d.status === "pending")
  usePolling(list.refresh, 3_000, pending)

  const filter = (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const form = new FormData(/** @type {HTMLFormElement} */ (event.currentTarget))
    location.hash = withQuery("#/deliveries", {
      accountId: String(form.get("accountId") ?? "").trim(),
      status: String(form.get("status") ?? "")
    })
  }
  const retry = async (/** @type {any} */ delivery) => {
    try {
      const again = await api("POST", `admin/webhooks/deliveries/${seg(delivery.id)}/retry`)
      setError(null)
      list.setRows((rows) => rows.map((d) => (d.id === again.id ? again : d)))
      notify(`Delivery ${again.id} is ${again.status} again: it is sent now.`)
    } catch (e) {
      setError(e)
    }
  }

  return html`
    <${PageTitle}>Webhook deliveries<//>
    <form key=${query.toString()} class="filters" aria-label="Filter deliveries" onSubmit=${filter}>
      <div><label for="d-account">Account id</label><input id="d-account" name="accountId" defaultValue=${accountId} /></div>
      <div><label for="d-status">Status</label>
        <select id="d-status" name="status">
          ${[["", "Any"], ["pending", "pending"], ["sent", "sent"], ["failed", "failed"]].map(([value, label]) =>
            html`<option value=${value} selected=${status === value}>${label}</option>`
          )}
        </select>
      </div>
      <div class="actions"><button type="submit">Apply filters</button> <button type="button" onClick=${list.refresh}>Refresh</button></div>
    </form>
    <${ErrorMessage} error=${list.error ?? error} />
    <table>
      <caption>Deliveries of every account, newest first${pending ? " (refreshing while any is pending)" : ""}</caption>
      <thead><tr>
        <th scope="col">Delivery</th><th scope="col">Account</th><th scope="col">Job</th><th scope="col">URL</th>
        <th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Next attempt</th><th scope="col">Created</th>
        <th scope="col"><span class="sr-only">Actions</span></th>
      </tr></thead>
      <tbody>
        ${list.rows.map((d) => html`<tr data-delivery=${d.id}>
          <td><code>${d.id}</code></td>
          <td><a href=${href(`accounts/${seg(d.accountId)}`)}><code>${d.accountId}</code></a></td>
          <td><a href=${href(`jobs/${seg(d.jobId)}`)}><code>${d.jobId}</code></a></td>
          <td class="url">${d.url}</td>
          <td><${Status} status=${d.status} /></td>
          <td><${Attempts} attempts=${d.attempts} /></td>
          <td>${time(d.nextAttemptAt)}</td>
          <td>${time(d.createdAt)}</td>
          <td>${d.status === "failed" && html`<button type="button" onClick=${() => retry(d)} aria-label=${`Retry delivery ${d.id}`}>Retry</button>`}</td>
        </tr>`)}
        ${!list.loading && list.rows.length === 0 && html`<tr><td colspan="9">No deliveries match.</td></tr>`}
      </tbody>
    </table>
    <${LoadMore} list=${list} what="deliveries" />
  `
}
