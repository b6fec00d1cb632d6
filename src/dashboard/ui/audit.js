/** The audit log of admin writes: who changed what, when, with which request. */
import { html } from "htm/preact"
import { withQuery } from "./api.js"
import { AUDIT_ACTIONS } from "./auditActions.js"
import { time } from "./format.js"
import { ErrorMessage, LoadMore, PageTitle, usePagedList } from "./ui.js"

/** @typedef {import("./accounts.js").ViewProps} ViewProps */

/** @param {ViewProps} props */
export const AuditView = ({ api, query }) => {
  const filters = { actor: query.get("actor") ?? "", action: query.get("action") ?? "", target: query.get("target") ?? "" }
  const list = usePagedList(api, withQuery("admin/audit", filters), "entries")
  const filter = (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const form = new FormData(/** @type {HTMLFormElement} */ (event.currentTarget))
    const text = (/** @type {string} */ name) => String(form.get(name) ?? "").trim()
    location.hash = withQuery("#/audit", { actor: text("actor"), action: text("action"), target: text("target") })
  }
  return html`
    <${PageTitle}>Audit log<//>
    <form key=${query.toString()} class="filters" aria-label="Filter the audit log" onSubmit=${filter}>
      <div><label for="a-actor">Actor</label><input id="a-actor" name="actor" defaultValue=${filters.actor} /></div>
      <div><label for="a-action">Action</label>
        <select id="a-action" name="action">
          <option value="" selected=${filters.action === ""}>Any</option>
          ${AUDIT_ACTIONS.map((a) => html`<option value=${a} selected=${filters.action === a}>${a}</option>`)}
        </select>
      </div>
      <div><label for="a-target">Target id</label><input id="a-target" name="target" defaultValue=${filters.target} /></div>
      <div class="actions"><button type="submit">Apply filters</button> <button type="button" onClick=${list.refresh}>Refresh</button></div>
    </form>
    <${ErrorMessage} error=${list.error} />
    <table>
      <caption>Every admin write, newest first</caption>
      <thead><tr>
        <th scope="col">Time</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Target</th>
        <th scope="col">Summary</th><th scope="col">Request</th>
      </tr></thead>
      <tbody>
        ${list.rows.map((e) => html`<tr>
          <td>${time(e.createdAt)}</td>
          <td>${e.actor}</td>
          <td>${e.action}</td>
          <td><code>${e.target}</code></td>
          <td><code class="summary-json">${JSON.stringify(e.summary)}</code></td>
          <td><code>${e.requestId ?? "—"}</code></td>
        </tr>`)}
        ${!list.loading && list.rows.length === 0 && html`<tr><td colspan="6">No entries.</td></tr>`}
      </tbody>
    </table>
    <${LoadMore} list=${list} what="entries" />
  `
}
