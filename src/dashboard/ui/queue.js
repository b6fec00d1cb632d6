/** The queue: waiting jobs per account and model, with the places of each group's first and last job. */
import { html } from "htm/preact"
import { time } from "./format.js"
import { ErrorMessage, href, PageTitle, useLoad, usePolling } from "./ui.js"

/** @typedef {import("./accounts.js").ViewProps} ViewProps */

/** @param {{ p50: string, p90: string }} range */
const between = (range) => html`${time(range.p50)} <span class="muted">(p90 ${time(range.p90)})</span>`

/** @param {ViewProps} props */
export const QueueView = ({ api }) => {
  const board = useLoad(() => api("GET", "admin/queue"), [])
  usePolling(board.reload, 5000, true)
  const data = board.data
  return html`
    <${PageTitle}>Queue<//>
    <p class="muted">
      Jobs waiting, per account and model, in the fair order: each group's first and last job's position among the jobs
      waiting for the same capacity, and when they should start.${data && html` Read ${time(data.at)}.`}
    </p>
    <${ErrorMessage} error=${board.error} />
    <table>
      <caption>Waiting jobs by the position of their first job${
        data && data.waitingGroups > data.groups.length ? ` (the first ${data.groups.length} of ${data.waitingGroups} groups)` : ""
      }</caption>
      <thead><tr>
        <th scope="col">Account</th><th scope="col">Model</th><th scope="col">Version</th><th scope="col">Waiting</th>
        <th scope="col">Positions</th><th scope="col">First starts</th><th scope="col">Last ends</th>
      </tr></thead>
      <tbody>
        ${data?.groups.map((/** @type {any} */ g) => html`<tr>
          <td><a href=${href(`accounts/${encodeURIComponent(g.accountId)}`)}><code>${g.accountId}</code></a></td>
          <td>${g.model}</td>
          <td>${g.version}</td>
          <td>${g.waiting}</td>
          <td>${g.first.position === g.last.position ? g.first.position : `${g.first.position}–${g.last.position}`}</td>
          <td>${between(g.first.estimatedStartAt)}</td>
          <td>${between(g.last.estimatedCompletionAt)}</td>
        </tr>`)}
        ${data && data.groups.length === 0 && html`<tr><td colspan="7">No jobs waiting.</td></tr>`}
      </tbody>
    </table>
  `
}
