/**
 * The operator dashboard: a client of the admin API in the browser. The admin token lives in
 * sessionStorage (this tab only, gone when it closes) and goes out as a Bearer header; there is
 * no cookie, so no request is ever authorised by the browser on its own (docs/dashboard.md).
 */
import { render } from "preact"
import { html } from "htm/preact"
import { useCallback, useEffect, useMemo, useState } from "preact/hooks"
import { AccountView } from "./account.js"
import { AccountsView } from "./accounts.js"
import { adminApi } from "./api.js"
import { AuditView } from "./audit.js"
import { CatalogView } from "./catalog.js"
import { DeliveriesView } from "./deliveries.js"
import { JobsView, JobView } from "./jobs.js"
import { QueueView } from "./queue.js"
import { UsageView } from "./usage.js"
import { ErrorMessage } from "./ui.js"

const TOKEN_KEY = "genjobs.adminToken"

/** The view the hash names: `#/jobs/job_1?x=y` is ["jobs", "job_1"] with its query. */
const readRoute = () => {
  const url = new URL(location.hash.replace(/^#\/?/, "/"), "http://dashboard")
  return { parts: url.pathname.split("/").filter((p) => p !== "").map(decodeURIComponent), query: url.searchParams }
}

const SECTIONS = [
  ["accounts", "Accounts"],
  ["usage", "Usage"],
  ["jobs", "Jobs"],
  ["queue", "Queue"],
  ["deliveries", "Webhook deliveries"],
  ["catalog", "Catalog"],
  ["audit", "Audit log"]
]

/**
 * @param {{ onSignIn: (token: string) => void, notice: string | null }} props
 */
const SignIn = ({ notice, onSignIn }) => {
  const [error, setError] = useState(/** @type {any} */ (null))
  const [busy, setBusy] = useState(false)
  const submit = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    const token = String(new FormData(/** @type {HTMLFormElement} */ (event.currentTarget)).get("token") ?? "").trim()
    setBusy(true)
    try {
      await adminApi(token)("GET", "admin/accounts?limit=1")
      onSignIn(token)
    } catch (e) {
      const err = /** @type {any} */ (e)
      setError(
        err.status === 401
          ? { ...err, message: "That is not an admin token of this server." }
          : err.status === 404
          ? { ...err, message: "The admin API is off on this server: start it with ADMIN_TOKEN or ADMIN_TOKENS." }
          : err
      )
    } finally {
      setBusy(false)
    }
  }
  return html`<main id="main" class="signin">
    <h1>genjobs dashboard</h1>
    ${notice && html`<p role="status">${notice}</p>`}
    <form onSubmit=${submit}>
      <label for="token">Admin token</label>
      <input id="token" name="token" type="password" autocomplete="current-password" required autofocus />
      <button type="submit" disabled=${busy}>${busy ? "Signing in…" : "Sign in"}</button>
    </form>
    <${ErrorMessage} error=${error} />
    <p class="muted">The token is kept in this tab only (sessionStorage) and sent to this server's admin API.</p>
  </main>`
}

const App = () => {
  const [token, setToken] = useState(() => sessionStorage.getItem(TOKEN_KEY))
  const [signInNotice, setSignInNotice] = useState(/** @type {string | null} */ (null))
  const [route, setRoute] = useState(readRoute)
  const [notice, setNotice] = useState("")

  useEffect(() => {
    const onHash = () => {
      setRoute(readRoute())
      setNotice("")
    }
    addEventListener("hashchange", onHash)
    return () => removeEventListener("hashchange", onHash)
  }, [])

  const signOut = useCallback((/** @type {string | null} */ why) => {
    sessionStorage.removeItem(TOKEN_KEY)
    setToken(null)
    setSignInNotice(why)
  }, [])

  const api = useMemo(
    () => (token === null ? null : adminApi(token, () => signOut("The admin token was refused; sign in again."))),
    [token]
  )

  if (api === null) {
    return html`<${SignIn}
      notice=${signInNotice}
      onSignIn=${(/** @type {string} */ t) => {
        sessionStorage.setItem(TOKEN_KEY, t)
        setToken(t)
        if (location.hash === "") location.hash = "#/accounts"
      }}
    />`
  }

  const [section = "accounts", id] = route.parts
  const props = { api, notify: setNotice, query: route.query }
  const view = section === "accounts" && id !== undefined
    ? html`<${AccountView} key=${id} id=${id} ...${props} />`
    : section === "accounts"
    ? html`<${AccountsView} ...${props} />`
    : section === "jobs" && id !== undefined
    ? html`<${JobView} key=${id} id=${id} ...${props} />`
    : section === "jobs"
    ? html`<${JobsView} ...${props} />`
    : section === "queue"
    ? html`<${QueueView} ...${props} />`
    : section === "usage"
    ? html`<${UsageView} ...${props} />`
    : section === "deliveries"
    ? html`<${DeliveriesView} ...${props} />`
    : section === "catalog"
    ? html`<${CatalogView} ...${props} />`
    : section === "audit"
    ? html`<${AuditView} ...${props} />`
    : html`<h1>Nothing here</h1><p><a href="#/accounts">Go to accounts</a></p>`

  return html`
    <a class="skip" href="#main" onClick=${(/** @type {Event} */ e) => {
      e.preventDefault()
      const heading = /** @type {HTMLElement | null} */ (document.querySelector("main h1"))
      heading?.focus()
    }}>Skip to content</a>
    <header>
      <span class="brand">genjobs</span>
      <nav aria-label="Sections">
        <ul>
          ${SECTIONS.map(([path, label]) =>
            html`<li><a href=${`#/${path}`} aria-current=${section === path ? "page" : undefined}>${label}</a></li>`
          )}
        </ul>
      </nav>
      <button type="button" class="secondary" onClick=${() => signOut("Signed out.")}>Sign out</button>
    </header>
    <p class="notice" role="status" aria-live="polite">${notice}</p>
    <main id="main">${view}</main>
  `
}

const root = /** @type {HTMLElement} */ (document.getElementById("app"))
root.replaceChildren()
render(html`<${App} />`, root)
