/** One account: balance and credit, settings, API keys, webhook secret, ledger. */
import { html } from "htm/preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { seg, withQuery } from "./api.js"
import { BudgetBar, BudgetFields, budgetOf, BudgetForm, loadBudgetSpend, patchKeyBudget } from "./budgets.js"
import { dollarsToMicroCents, listOf, localToIso, money, time } from "./format.js"
import { ErrorMessage, href, LoadMore, PageTitle, useLoad, usePagedList } from "./ui.js"

/**
 * @typedef {import("./accounts.js").ViewProps} ViewProps
 * @typedef {{ api: import("./api.js").Call, notify: (message: string) => void, account: any, onAccount: (account: any) => void }} SectionProps
 */

const SCOPES = [
  ["submit_job", "submit_job: submit and cancel jobs"],
  ["check_status", "check_status: read jobs, list them, estimate"],
  ["list_models", "list_models: the models and providers endpoints"]
]

const OVERLAPS = [
  [0, "None: the old secret stops at once"],
  [3600, "1 hour"],
  [86400, "1 day"],
  [7 * 86400, "7 days"],
  [30 * 86400, "30 days"]
]

/** @param {SectionProps & { onCredited: () => void }} props */
const Credit = ({ account, api, notify, onAccount, onCredited }) => {
  const [error, setError] = useState(/** @type {any} */ (null))
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const form = /** @type {HTMLFormElement} */ (event.currentTarget)
    const amountMicroCents = dollarsToMicroCents(String(new FormData(form).get("amount") ?? ""))
    if (!(amountMicroCents > 0)) {
      setError({ code: "VALIDATION_ERROR", message: "The amount must be more than zero dollars, such as 10 or 2.50." })
      return
    }
    try {
      const updated = await api("POST", `admin/accounts/${seg(account.id)}/credits`, { amountMicroCents })
      setError(null)
      form.reset()
      onAccount(updated)
      onCredited()
      notify(`Credited ${money(amountMicroCents)}; the balance is ${money(updated.balanceMicroCents)}.`)
    } catch (e) {
      setError(e)
    }
  }
  return html`<section aria-labelledby="credit">
    <h2 id="credit">Add credit</h2>
    <form class="inline" onSubmit=${submit}>
      <label for="credit-amount">Amount (USD)</label>
      <input id="credit-amount" name="amount" inputmode="decimal" required placeholder="10.00" />
      <button type="submit">Add credit</button>
    </form>
    <${ErrorMessage} error=${error} />
  </section>`
}

/** @param {SectionProps} props */
const AccountBudget = ({ account, api, notify, onAccount }) => {
  const spend = useLoad(() => loadBudgetSpend(api, account, []), [account.id, account.budget?.limitMicroCents, account.budget?.period])
  const save = async (/** @type {any} */ budget) => {
    const updated = await api("PATCH", `admin/accounts/${seg(account.id)}`, { budget })
    onAccount(updated)
    notify(budget === null ? "The account's budget is removed." : `The account's budget is ${money(budget.limitMicroCents)} ${budget.period === "total" ? "in total" : `per ${budget.period}`}.`)
  }
  return html`<section aria-labelledby="budget">
    <h2 id="budget">Budget</h2>
    <p class="hint">What all the account's keys together may spend; a submit past it is refused (402 BUDGET_EXCEEDED).</p>
    <${ErrorMessage} error=${spend.error} />
    <p><${BudgetBar} budget=${account.budget} createdAt=${account.createdAt} label="Account budget" testId="budget-account"
      spent=${account.budget ? spend.data?.[account.budget.period]?.account : undefined} /></p>
    <${BudgetForm} key=${JSON.stringify(account.budget)} id="account-budget" budget=${account.budget} what="the account" save=${save} />
  </section>`
}

/** @typedef {{ type: string, percentage: string, models: string }} DiscountRow a discount as its inputs hold it */

/** @param {SectionProps} props */
const Settings = ({ account, api, notify, onAccount }) => {
  const [error, setError] = useState(/** @type {any} */ (null))
  const [discounts, setDiscounts] = useState(
    /** @returns {Array<DiscountRow>} */ () => account.discounts.map((/** @type {any} */ d) => ({ type: d.type, percentage: String(d.percentage), models: (d.models ?? []).join(", ") }))
  )
  const setDiscount = (/** @type {number} */ i, /** @type {string} */ field, /** @type {string} */ value) =>
    setDiscounts((all) => all.map((d, j) => (i === j ? { ...d, [field]: value } : d)))
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const form = new FormData(/** @type {HTMLFormElement} */ (event.currentTarget))
    try {
      const updated = await api("PATCH", `admin/accounts/${seg(account.id)}`, {
        name: String(form.get("name")).trim(),
        maxConcurrentJobs: Number(form.get("maxConcurrentJobs")),
        fairShareWeight: Number(form.get("fairShareWeight")),
        standardWebhooks: form.get("standardWebhooks") === "on",
        segments: listOf(String(form.get("segments") ?? "")),
        allowedModels: listOf(String(form.get("allowedModels") ?? "")),
        discounts: discounts.map((d) => ({
          type: d.type.trim(),
          percentage: Number(d.percentage),
          ...(listOf(d.models).length > 0 ? { models: listOf(d.models) } : {})
        }))
      })
      setError(null)
      onAccount(updated)
      notify("Settings saved.")
    } catch (e) {
      setError(e)
    }
  }
  return html`<section aria-labelledby="settings">
    <h2 id="settings">Settings and limits</h2>
    <form class="grid" onSubmit=${submit}>
      <label for="settings-name">Name</label>
      <input id="settings-name" name="name" required maxlength="200" defaultValue=${account.name} />
      <label for="settings-max">Concurrent jobs (plan maximum)</label>
      <input id="settings-max" name="maxConcurrentJobs" type="number" min="1" step="1" required defaultValue=${account.maxConcurrentJobs} />
      <label for="settings-weight">Fair-share weight</label>
      <input id="settings-weight" name="fairShareWeight" type="number" min="1" max="1000" step="1" required
        defaultValue=${account.fairShareWeight ?? 1} aria-describedby="settings-weight-hint" />
      <p id="settings-weight-hint" class="hint">1 to 1000: while other accounts' jobs wait for the same capacity, weight 2 starts two jobs for each one of weight 1.</p>
      <label for="settings-standard">Standard Webhooks headers</label>
      <input id="settings-standard" name="standardWebhooks" type="checkbox" defaultChecked=${account.standardWebhooks === true}
        aria-describedby="settings-standard-hint" />
      <p id="settings-standard-hint" class="hint">Also sign webhooks with webhook-id, webhook-timestamp and webhook-signature (same secret).</p>
      <label for="settings-segments">Segments</label>
      <input id="settings-segments" name="segments" defaultValue=${account.segments.join(", ")} aria-describedby="settings-segments-hint" />
      <p id="settings-segments-hint" class="hint">Comma-separated; the account sees models visible to any of them.</p>
      <label for="settings-models">Private models allowed</label>
      <input id="settings-models" name="allowedModels" defaultValue=${account.allowedModels.join(", ")} aria-describedby="settings-models-hint" />
      <p id="settings-models-hint" class="hint">Comma-separated model slugs.</p>
      <fieldset class="wide">
        <legend>Discounts</legend>
        ${discounts.length === 0 && html`<p class="muted">No discounts.</p>`}
        ${discounts.map((d, i) => html`<div class="discount">
          <label for=${`discount-type-${i}`}>Discount ${i + 1} type</label>
          <input id=${`discount-type-${i}`} required value=${d.type} onInput=${(/** @type {any} */ e) => setDiscount(i, "type", e.currentTarget.value)} />
          <label for=${`discount-pct-${i}`}>Discount ${i + 1} percentage</label>
          <input id=${`discount-pct-${i}`} type="number" min="0.01" max="100" step="0.01" required value=${d.percentage}
            onInput=${(/** @type {any} */ e) => setDiscount(i, "percentage", e.currentTarget.value)} />
          <label for=${`discount-models-${i}`}>Discount ${i + 1} models (empty: all)</label>
          <input id=${`discount-models-${i}`} value=${d.models} onInput=${(/** @type {any} */ e) => setDiscount(i, "models", e.currentTarget.value)} />
          <button type="button" class="secondary" onClick=${() => setDiscounts((all) => all.filter((_, j) => j !== i))}>
            Remove discount ${i + 1}
          </button>
        </div>`)}
        <button type="button" class="secondary" onClick=${() => setDiscounts((all) => [...all, { type: "", percentage: "", models: "" }])}>
          Add a discount
        </button>
      </fieldset>
      <div class="actions"><button type="submit">Save settings</button></div>
    </form>
    <${ErrorMessage} error=${error} />
  </section>`
}

/**
 * The secret of a key just created: shown here once, never again.
 * @param {{ created: any, onDone: () => void }} props
 */
const NewKeySecret = ({ created, onDone }) => {
  const ref = useRef(/** @type {HTMLDivElement | null} */ (null))
  const [copied, setCopied] = useState("")
  useEffect(() => ref.current?.focus(), [])
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.key)
      setCopied("Copied.")
    } catch {
      setCopied("Copying is not allowed here: select the key and copy it.")
    }
  }
  return html`<div class="secret" tabindex="-1" ref=${ref} role="region" aria-labelledby="new-key-title">
    <h3 id="new-key-title">Key “${created.name}” created: copy its secret now</h3>
    <p>It is shown only this once; the engine keeps only its hash.</p>
    <label for="new-key-secret">New API key secret</label>
    <input id="new-key-secret" readonly value=${created.key} onFocus=${(/** @type {any} */ e) => e.currentTarget.select()} />
    <button type="button" onClick=${copy}>Copy</button>
    <button type="button" class="secondary" onClick=${onDone}>I have stored it</button>
    <span role="status">${copied}</span>
  </div>`
}

/** @param {SectionProps} props */
const Keys = ({ account, api, notify }) => {
  const keys = useLoad(() => api("GET", `admin/accounts/${seg(account.id)}/keys`), [account.id])
  const spend = useLoad(() => loadBudgetSpend(api, account, keys.data?.keys ?? []), [keys.data])
  /** The key whose budget form is open. */
  const [editing, setEditing] = useState(/** @type {string | null} */ (null))
  const [created, setCreated] = useState(/** @type {any} */ (null))
  const [error, setError] = useState(/** @type {any} */ (null))
  const create = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const form = /** @type {HTMLFormElement} */ (event.currentTarget)
    const data = new FormData(form)
    try {
      const key = await api("POST", `admin/accounts/${seg(account.id)}/keys`, {
        name: String(data.get("name")).trim(),
        scopes: data.getAll("scopes").map(String),
        allowedIPs: listOf(String(data.get("allowedIPs") ?? "")),
        expiresAt: localToIso(String(data.get("expiresAt") ?? "")) ?? null,
        ...budgetOf(data)
      })
      setError(null)
      form.reset()
      setCreated(key)
      void keys.reload()
    } catch (e) {
      setError(e)
    }
  }
  const saveBudget = async (/** @type {any} */ key, /** @type {any} */ budget) => {
    await patchKeyBudget(api, key.id, budget)
    setEditing(null)
    notify(budget === null ? `Key ${key.name}: budget removed.` : `Key ${key.name}: budget ${money(budget.limitMicroCents)} ${budget.period === "total" ? "in total" : `per ${budget.period}`}.`)
    void keys.reload()
  }
  const deactivate = async (/** @type {any} */ key) => {
    if (!confirm(`Deactivate the key “${key.name}” (${key.hint}…)? Requests with it will be refused from now on.`)) return
    try {
      await api("POST", `admin/keys/${seg(key.id)}/deactivate`)
      notify(`Key ${key.name} (${key.hint}…) deactivated.`)
      void keys.reload()
    } catch (e) {
      setError(e)
    }
  }
  return html`<section aria-labelledby="keys">
    <h2 id="keys">API keys</h2>
    <${ErrorMessage} error=${keys.error} />
    <table>
      <caption>Keys of this account, oldest first; secrets are never shown again after creation</caption>
      <thead><tr>
        <th scope="col">Name</th><th scope="col">Starts with</th><th scope="col">Scopes</th><th scope="col">Allowed IPs</th>
        <th scope="col">Expires</th><th scope="col">Budget</th><th scope="col">State</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th>
      </tr></thead>
      <tbody>
        ${(keys.data?.keys ?? []).map((/** @type {any} */ k) => html`<tr>
          <td>${k.name}</td>
          <td><code>${k.hint}…</code></td>
          <td>${k.scopes.join(", ") || "all"}</td>
          <td>${k.allowedIPs.join(", ") || "any"}</td>
          <td>${time(k.expiresAt)}</td>
          <td><${BudgetBar} budget=${k.budget} createdAt=${k.createdAt} label=${`Budget of key ${k.name}`} testId=${`budget-key-${k.id}`}
            spent=${k.budget ? spend.data?.[k.budget.period]?.keys.get(k.id) ?? (spend.data ? 0 : undefined) : undefined} /></td>
          <td>${k.active ? "active" : "deactivated"}</td>
          <td>${time(k.createdAt)}</td>
          <td class="row-actions">
            <button type="button" class="secondary" aria-expanded=${editing === k.id} onClick=${() => setEditing(editing === k.id ? null : k.id)}
              aria-label=${`Edit the budget of key ${k.name} (${k.hint})`}>Budget</button>
            ${k.active && html`<button type="button" class="danger" onClick=${() => deactivate(k)}
            aria-label=${`Deactivate key ${k.name} (${k.hint})`}>Deactivate</button>`}
          </td>
        </tr>
        ${editing === k.id && html`<tr><td colspan="9">
          <${BudgetForm} id=${`key-budget-${k.id}`} budget=${k.budget} what=${`key ${k.name}`} save=${(/** @type {any} */ b) => saveBudget(k, b)} />
        </td></tr>`}`)}
        ${keys.data?.keys.length === 0 && html`<tr><td colspan="9">No keys yet.</td></tr>`}
      </tbody>
    </table>
    ${created !== null && html`<${NewKeySecret} created=${created} onDone=${() => setCreated(null)} />`}
    <h3>Create a key</h3>
    <form class="grid" onSubmit=${create}>
      <label for="key-name">Key name</label>
      <input id="key-name" name="name" required maxlength="200" />
      <fieldset class="wide">
        <legend>Scopes (none checked: every operation)</legend>
        ${SCOPES.map(([value, label]) => html`<label class="check">
          <input type="checkbox" name="scopes" value=${value} /> ${label}
        </label>`)}
      </fieldset>
      <label for="key-ips">Allowed IPs</label>
      <textarea id="key-ips" name="allowedIPs" rows="2" aria-describedby="key-ips-hint"></textarea>
      <p id="key-ips-hint" class="hint">Addresses or CIDR ranges, one per line or comma-separated; empty allows any address.</p>
      <label for="key-expires">Expires at (optional)</label>
      <input id="key-expires" name="expiresAt" type="datetime-local" />
      <${BudgetFields} id="key-budget" />
      <div class="actions"><button type="submit">Create key</button></div>
    </form>
    <${ErrorMessage} error=${error} />
  </section>`
}

/** @param {SectionProps} props */
const WebhookSecret = ({ account, api, notify, onAccount }) => {
  const [shown, setShown] = useState(false)
  const [error, setError] = useState(/** @type {any} */ (null))
  const mask = (/** @type {string} */ secret) => (shown ? secret : `${secret.slice(0, 6)}${"•".repeat(12)}`)
  const rotate = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const overlapSeconds = Number(new FormData(/** @type {HTMLFormElement} */ (event.currentTarget)).get("overlap"))
    if (!confirm("Rotate the webhook secret? Receivers must switch to the new one before the overlap ends.")) return
    try {
      const updated = await api("POST", `admin/accounts/${seg(account.id)}/webhook-secret/rotate`, { overlapSeconds })
      setError(null)
      onAccount(updated)
      notify(
        updated.previousWebhookSecretExpiresAt === null
          ? "Webhook secret rotated."
          : `Webhook secret rotated; the previous one also signs until ${time(updated.previousWebhookSecretExpiresAt)}.`
      )
    } catch (e) {
      setError(e)
    }
  }
  const previousLive = account.previousWebhookSecret !== null &&
    (account.previousWebhookSecretExpiresAt === null || Date.parse(account.previousWebhookSecretExpiresAt) > Date.now())
  return html`<section aria-labelledby="webhook-secret">
    <h2 id="webhook-secret">Webhook secret</h2>
    <dl>
      <dt>Current secret</dt>
      <dd><code data-testid="webhook-secret">${mask(account.webhookSecret)}</code></dd>
      ${previousLive && html`
        <dt>Previous secret, still signing</dt>
        <dd><code>${mask(account.previousWebhookSecret)}</code> until ${time(account.previousWebhookSecretExpiresAt)}</dd>`}
    </dl>
    <button type="button" class="secondary" aria-pressed=${shown} onClick=${() => setShown(!shown)}>
      ${shown ? "Hide secrets" : "Show secrets"}
    </button>
    <form class="inline" onSubmit=${rotate}>
      <label for="overlap">Keep the old secret signing for</label>
      <select id="overlap" name="overlap">
        ${OVERLAPS.map(([seconds, label]) => html`<option value=${seconds} selected=${seconds === 86400}>${label}</option>`)}
      </select>
      <button type="submit">Rotate secret</button>
    </form>
    <${ErrorMessage} error=${error} />
  </section>`
}

/**
 * @param {{ api: import("./api.js").Call, accountId: string, version: number }} props
 */
const Ledger = ({ accountId, api, version }) => {
  const list = usePagedList(api, `admin/accounts/${seg(accountId)}/ledger`, "entries")
  useEffect(() => {
    if (version > 0) void list.refresh()
  }, [version])
  return html`<section aria-labelledby="ledger">
    <h2 id="ledger">Ledger</h2>
    <${ErrorMessage} error=${list.error} />
    <table>
      <caption>Credits, charges and refunds, oldest first; they sum to the balance</caption>
      <thead><tr><th scope="col">Time</th><th scope="col">Kind</th><th scope="col" class="num">Amount</th><th scope="col">Job</th></tr></thead>
      <tbody>
        ${list.rows.map((e) => html`<tr>
          <td>${time(e.createdAt)}</td>
          <td>${e.kind}</td>
          <td class="num">${money(e.amountMicroCents)}</td>
          <td>${e.jobId === null ? "—" : html`<a href=${href(`jobs/${seg(e.jobId)}`)}><code>${e.jobId}</code></a>`}</td>
        </tr>`)}
        ${!list.loading && list.rows.length === 0 && html`<tr><td colspan="4">No entries.</td></tr>`}
      </tbody>
    </table>
    <${LoadMore} list=${list} what="entries" />
  </section>`
}

/** @param {ViewProps & { id: string }} props */
export const AccountView = ({ api, id, notify }) => {
  const loaded = useLoad(() => api("GET", `admin/accounts/${seg(id)}`), [id])
  const [ledgerVersion, setLedgerVersion] = useState(0)
  const account = loaded.data
  if (account === undefined) {
    return html`<${PageTitle}>Account ${id}<//>${loaded.error ? html`<${ErrorMessage} error=${loaded.error} />` : html`<p>Loading…</p>`}`
  }
  const section = { api, notify, account, onAccount: loaded.setData }
  return html`
    <${PageTitle}>${account.name}<//>
    <dl class="summary">
      <dt>Id</dt><dd><code>${account.id}</code></dd>
      <dt>Balance</dt><dd data-testid="balance">${money(account.balanceMicroCents)}</dd>
      <dt>Concurrent jobs</dt><dd>${account.maxConcurrentJobs}</dd>
      <dt>Fair-share weight</dt><dd data-testid="fair-share-weight">${account.fairShareWeight ?? 1}</dd>
      <dt>Standard Webhooks</dt><dd data-testid="standard-webhooks">${account.standardWebhooks ? "on" : "off"}</dd>
      <dt>Segments</dt><dd>${account.segments.join(", ") || "—"}</dd>
      <dt>Discounts</dt><dd>${account.discounts.map((/** @type {any} */ d) => `${d.type} ${d.percentage}%`).join(", ") || "—"}</dd>
      <dt>Created</dt><dd>${time(account.createdAt)}</dd>
    </dl>
    <p class="links">
      <a href=${withQuery("#/jobs", { accountId: account.id })}>Jobs of this account</a>
      <a href=${withQuery("#/usage", { accountId: account.id })}>Usage charts</a>
      <a href=${withQuery("#/deliveries", { accountId: account.id })}>Webhook deliveries</a>
      <a href=${withQuery("#/audit", { target: account.id })}>Audit entries</a>
    </p>
    <${Credit} ...${section} onCredited=${() => setLedgerVersion((v) => v + 1)} />
    <${AccountBudget} ...${section} />
    <${Keys} ...${section} />
    <${WebhookSecret} ...${section} />
    <${Settings} key=${account.id} ...${section} />
    <${Ledger} api=${api} accountId=${account.id} version=${ledgerVersion} />
  `
}
