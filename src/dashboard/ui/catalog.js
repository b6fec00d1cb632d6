/**
 * The catalog as its JSON document: edit, check and preview the change on the server (the same
 * check a replace makes), then apply exactly what was previewed.
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

/** @param {ViewProps} props */
export const CatalogView = ({ api, notify }) => {
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

  return html`
    <${PageTitle}>Catalog<//>
    <p>The whole catalog as one document (docs/catalog.md explains every field).
      Check it to see what would change; nothing is stored until you apply.</p>
    ${text === null && !error && html`<p>Loading…</p>`}
    ${text !== null && html`<form onSubmit=${check}>
      <label for="catalog-doc">Catalog document (JSON)</label>
      <textarea id="catalog-doc" class="code" rows="28" spellcheck="false" value=${text}
        onInput=${(/** @type {any} */ e) => {
          setText(e.currentTarget.value)
          setPreview(null)
        }}></textarea>
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
