/**
 * The catalog as its JSON document, or as a form of its models and versions: edit, check and
 * preview the change on the server (the same check a replace makes), then apply exactly what was
 * previewed. Both views edit the same document text.
 */
import { html } from "htm/preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError } from "./api.js"
import { ErrorMessage, PageTitle } from "./ui.js"

/** @typedef {import("./accounts.js").ViewProps} ViewProps */

const PARTS = [
  ["models", "Models"],
  ["providers", "Providers"],
  ["categories", "Categories"],
  ["capabilities", "Capabilities"]
]

/** @param {string} part @param {any} item */
const idOf = (part, item) => (part === "models" ? item.slug : item.id)

/**
 * The top-level fields of an item that differ between two documents, for a changed id.
 * @param {any} before @param {any} after @param {string} part @param {string} id
 */
const changedFields = (before, after, part, id) => {
  const a = before[part].find((/** @type {any} */ x) => idOf(part, x) === id) ?? {}
  const b = after[part].find((/** @type {any} */ x) => idOf(part, x) === id) ?? {}
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]))
}

/** @param {{ preview: any, stored: any, next: any }} props */
const Diff = ({ next, preview, stored }) => {
  const ref = useRef(/** @type {HTMLElement | null} */ (null))
  useEffect(() => ref.current?.focus(), [preview])
  if (preview.unchanged) {
    return html`<section class="diff" tabindex="-1" ref=${ref} aria-labelledby="diff-title">
      <h2 id="diff-title">No changes</h2>
      <p>The document matches the stored catalog (revision ${preview.revision}); there is nothing to apply.</p>
    </section>`
  }
  return html`<section class="diff" tabindex="-1" ref=${ref} aria-labelledby="diff-title">
    <h2 id="diff-title">Changes against revision ${preview.revision}</h2>
    ${PARTS.map(([part, label]) => {
      const d = preview.diff[part]
      if (d.added.length + d.removed.length + d.changed.length === 0) return null
      return html`<h3>${label}</h3><ul>
        ${d.added.map((/** @type {string} */ id) => html`<li class="added">added <code>${id}</code></li>`)}
        ${d.removed.map((/** @type {string} */ id) => html`<li class="removed">removed <code>${id}</code></li>`)}
        ${d.changed.map((/** @type {string} */ id) => html`<li class="changed">changed <code>${id}</code>:
          ${changedFields(stored, next, part, id).join(", ")}</li>`)}
      </ul>`
    })}
  </section>`
}

const VISIBILITIES = ["public", "segment", "private"]
const VERSION_STATUSES = ["active", "deprecated", "disabled", "deleted"]

/**
 * The models of a document as fields: name, visibility, and each version's status and base
 * credits. Every change writes the whole document back.
 * @param {{ document: any, onChange: (document: any) => void }} props
 */
const ModelsForm = ({ document, onChange }) => {
  const models = Array.isArray(document?.models) ? document.models : []
  const setModel = (/** @type {number} */ i, /** @type {any} */ patch) =>
    onChange({ ...document, models: models.map((/** @type {any} */ m, /** @type {number} */ j) => (i === j ? { ...m, ...patch } : m)) })
  const setVersion = (/** @type {number} */ i, /** @type {number} */ v, /** @type {(version: any) => any} */ change) =>
    setModel(i, { versions: models[i].versions.map((/** @type {any} */ x, /** @type {number} */ k) => (k === v ? change(x) : x)) })
  if (models.length === 0) return html`<p class="muted">The catalog has no models; add them in the JSON view.</p>`
  return html`<div class="models-form">
    ${models.map((/** @type {any} */ m, /** @type {number} */ i) => html`<fieldset class="model" data-model=${m.slug}>
      <legend><code>${m.slug}</code></legend>
      <div class="grid">
        <label for=${`model-${i}-name`}>Name</label>
        <input id=${`model-${i}-name`} value=${m.name} required onInput=${(/** @type {any} */ e) => setModel(i, { name: e.currentTarget.value })} />
        <label for=${`model-${i}-visibility`}>Visibility</label>
        <select id=${`model-${i}-visibility`} value=${m.visibility} onChange=${(/** @type {any} */ e) => setModel(i, { visibility: e.currentTarget.value })}>
          ${VISIBILITIES.map((v) => html`<option value=${v}>${v}</option>`)}
        </select>
      </div>
      <table>
        <caption>Versions of ${m.slug} (current: ${m.currentVersion})</caption>
        <thead><tr><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Base credits</th></tr></thead>
        <tbody>
          ${(m.versions ?? []).map((/** @type {any} */ v, /** @type {number} */ k) => html`<tr>
            <th scope="row"><code>${v.versionId}</code></th>
            <td>
              <label class="sr-only" for=${`model-${i}-v${k}-status`}>Status of ${m.slug} version ${v.versionId}</label>
              <select id=${`model-${i}-v${k}-status`} value=${v.status}
                onChange=${(/** @type {any} */ e) => setVersion(i, k, (x) => ({ ...x, status: e.currentTarget.value }))}>
                ${VERSION_STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
              </select>
            </td>
            <td>
              <label class="sr-only" for=${`model-${i}-v${k}-credits`}>Base credits of ${m.slug} version ${v.versionId}</label>
              <input id=${`model-${i}-v${k}-credits`} type="number" min="0" step="any" required value=${v.pricing?.baseCredits}
                onInput=${(/** @type {any} */ e) => {
                  const text = e.currentTarget.value
                  // Not a number: sent as typed, so the check refuses it with its reason.
                  setVersion(i, k, (x) => ({ ...x, pricing: { ...x.pricing, baseCredits: text === "" || !Number.isFinite(Number(text)) ? text : Number(text) } }))
                }} />
            </td>
          </tr>`)}
        </tbody>
      </table>
    </fieldset>`)}
  </div>`
}

/** @param {string | null} text */
const parsed = (text) => {
  try {
    return { document: JSON.parse(text ?? ""), error: null }
  } catch (e) {
    return { document: null, error: /** @type {Error} */ (e).message }
  }
}

/** @param {ViewProps} props */
export const CatalogView = ({ api, notify }) => {
  const [mode, setMode] = useState(/** @type {"form" | "json"} */ ("json"))
  const [text, setText] = useState(/** @type {string | null} */ (null))
  const [error, setError] = useState(/** @type {any} */ (null))
  /** The document checked, the server's answer, and the stored document it was compared with. */
  const [preview, setPreview] = useState(/** @type {{ document: any, result: any, stored: any } | null} */ (null))
  const [busy, setBusy] = useState(false)

  const load = async () => {
    try {
      setText(`${JSON.stringify(await api("GET", "admin/catalog"), null, 2)}\n`)
      setError(null)
      setPreview(null)
    } catch (e) {
      setError(e)
    }
  }
  useEffect(() => void load(), [])

  const check = async (/** @type {SubmitEvent} */ event) => {
    event.preventDefault()
    setPreview(null)
    let document
    try {
      document = JSON.parse(text ?? "")
    } catch (e) {
      setError({ code: "VALIDATION_ERROR", message: `The document is not JSON: ${/** @type {Error} */ (e).message}` })
      return
    }
    setBusy(true)
    try {
      const [result, stored] = await Promise.all([api("POST", "admin/catalog/diff", document), api("GET", "admin/catalog")])
      setPreview({ document, result, stored })
      setError(null)
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }

  /** After a refused apply: the document's changes against the catalog as it is now. */
  const showChangedSince = async (/** @type {unknown} */ document) => {
    try {
      const [again, stored] = await Promise.all([api("POST", "admin/catalog/diff", document), api("GET", "admin/catalog")])
      setPreview({ document, result: again, stored })
      setError({ code: "CATALOG_CHANGED", message: `The stored catalog changed since the preview (now revision ${again.revision}): check the changes again before applying.` })
    } catch (e) {
      setError(e)
    }
  }

  const apply = async () => {
    if (preview === null) return
    setBusy(true)
    try {
      // Applied only over the revision the changes were shown against: if someone replaced the
      // catalog since, the server refuses (412) and the operator sees the new changes first.
      const replaced = await api("PUT", "admin/catalog", preview.document, { "if-match": `"${preview.result.revision}"` })
      notify(`Catalog replaced: revision ${replaced.revision}, ${replaced.models} models.`)
      await load()
    } catch (e) {
      if (e instanceof ApiError && e.code === "PRECONDITION_FAILED") await showChangedSince(preview.document)
      else setError(e)
    } finally {
      setBusy(false)
    }
  }

  /** The form view edits the document the text holds, read once per render. */
  const formDocument = mode === "form" && text !== null ? parsed(text) : null

  return html`
    <${PageTitle}>Catalog<//>
    <p>The whole catalog as one document (docs/catalog.md explains every field).
      Check it to see what would change; nothing is stored until you apply.</p>
    ${text === null && !error && html`<p>Loading…</p>`}
    ${text !== null && html`<div class="toolbar" role="group" aria-label="Edit the catalog as">
      <button type="button" class="secondary" aria-pressed=${mode === "form"} onClick=${() => setMode("form")}>Models form</button>
      <button type="button" class="secondary" aria-pressed=${mode === "json"} onClick=${() => setMode("json")}>JSON document</button>
    </div>`}
    ${text !== null && html`<form onSubmit=${check}>
      ${mode === "json"
        ? html`<label for="catalog-doc">Catalog document (JSON)</label>
          <textarea id="catalog-doc" class="code" rows="28" spellcheck="false" value=${text}
            onInput=${(/** @type {any} */ e) => {
              setText(e.currentTarget.value)
              setPreview(null)
            }}></textarea>`
        : formDocument?.error != null
        ? html`<p class="error" role="alert">The document is not JSON (${formDocument.error}): fix it in the JSON view first.</p>`
        : html`<${ModelsForm} document=${formDocument?.document} onChange=${(/** @type {any} */ doc) => {
          setText(`${JSON.stringify(doc, null, 2)}\n`)
          setPreview(null)
        }} />`}
      <div class="actions">
        <button type="submit" disabled=${busy}>Check and preview changes</button>
        <button type="button" class="secondary" onClick=${load} disabled=${busy}>Reload the stored catalog</button>
      </div>
    </form>`}
    <${ErrorMessage} error=${error} />
    ${preview !== null && html`<${Diff} preview=${preview.result} stored=${preview.stored} next=${preview.document} />`}
    ${preview !== null && !preview.result.unchanged && html`<p>
      <button type="button" onClick=${apply} disabled=${busy}>Apply these changes</button>
    </p>`}
  `
}
