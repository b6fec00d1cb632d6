/** Accounts: search, list, create. */
import { html } from "htm/preact"
import { useState } from "preact/hooks"
import { seg, withQuery } from "./api.js"
import { BudgetFields, budgetOf } from "./budgets.js"
import { dollarsToMicroCents, money, time } from "./format.js"
import { ErrorMessage, href, LoadMore, PageTitle, usePagedList } from "./ui.js"

/**
 * @typedef {{ api: import("./api.js").Call, notify: (message: string) => void, query: URLSearchParams }} ViewProps
 */

/** @param {ViewProps} props */
const CreateAccount = ({ api, notify }) => {
  const [error, setError] = useState(/** @type {any} */ (null))
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const form = new FormData(/** @type {HTMLFormElement} */ (event.currentTarget))
    const credit = String(form.get("credit") ?? "").trim()
    const creditsMicroCents = credit === "" ? 0 : dollarsToMicroCents(credit)
    if (Number.isNaN(creditsMicroCents)) {
      setError({ code: "VALIDATION_ERROR", message: "The opening credit must be an amount in dollars, such as 25 or 0.50." })
      return
    }
    try {
      const account = await api("POST", "admin/accounts", {
        name: String(form.get("name")).trim(),
        creditsMicroCents,
        maxConcurrentJobs: Number(form.get("maxConcurrentJobs")),
        ...budgetOf(form)
      })
      notify(`Account ${account.name} created with ${money(account.balanceMicroCents)}.`)
      location.hash = href(`accounts/${seg(account.id)}`)
    } catch (e) {
      setError(e)
    }
  }
  return html`<section aria-labelledby="create-account">
    <h2 id="create-account">Create an account</h2>
    <form class="grid" onSubmit=${submit}>
      <label for="account-name">Name</label>
      <input id="account-name" name="name" required maxlength="200" />
      <label for="account-credit">Opening credit (USD)</label>
      <input id="account-credit" name="credit" inputmode="decimal" placeholder="0.00" aria-describedby="account-credit-hint" />
      <p id="account-credit-hint" class="hint">Written to the ledger as a credit; 1 USD is 1,000,000 micro-cents.</p>
      <label for="account-max">Concurrent jobs (plan maximum)</label>
      <input id="account-max" name="maxConcurrentJobs" type="number" min="1" step="1" defaultValue="5" required />
      <${BudgetFields} id="account-budget" />
      <div class="actions"><button type="submit">Create account</button></div>
    </form>
    <${ErrorMessage} error=${error} />
  </section>`
}

/** @param {ViewProps} props */
export const AccountsView = (props) => {
  const { api, query } = props
  const search = query.get("search") ?? ""
  const list = usePagedList(api, withQuery("admin/accounts", { search }), "accounts")
  const onSearch = (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const text = String(new FormData(/** @type {HTMLFormElement} */ (event.currentTarget)).get("search") ?? "").trim()
    location.hash = withQuery("#/accounts", { search: text })
  }
  return html`
    <${PageTitle}>Accounts<//>
    <form key=${search} role="search" class="inline" onSubmit=${onSearch}>
      <label for="account-search">Name or id contains</label>
      <input id="account-search" name="search" type="search" defaultValue=${search} maxlength="200" />
      <button type="submit">Search</button>
    </form>
    <${ErrorMessage} error=${list.error} />
    <table>
      <caption>${search === "" ? "All accounts, newest first" : `Accounts matching “${search}”`}</caption>
      <thead><tr>
        <th scope="col">Name</th><th scope="col">Id</th><th scope="col" class="num">Balance</th>
        <th scope="col" class="num">Concurrent jobs</th><th scope="col">Segments</th><th scope="col">Created</th>
      </tr></thead>
      <tbody>
        ${list.rows.map((a) => html`<tr>
          <td><a href=${href(`accounts/${seg(a.id)}`)}>${a.name}</a></td>
          <td><code>${a.id}</code></td>
          <td class="num">${money(a.balanceMicroCents)}</td>
          <td class="num">${a.maxConcurrentJobs}</td>
          <td>${a.segments.join(", ") || "—"}</td>
          <td>${time(a.createdAt)}</td>
        </tr>`)}
        ${!list.loading && list.rows.length === 0 && html`<tr><td colspan="6">No accounts.</td></tr>`}
      </tbody>
    </table>
    <${LoadMore} list=${list} what="accounts" />
    <${CreateAccount} ...${props} />
  `
}
