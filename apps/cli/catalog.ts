import * as Result from "effect/Result"
import * as Effect from "effect/Effect"
import type { CatalogDiff } from "genjobs"
import { readFile, writeFile } from "node:fs/promises"
import { adminClient } from "./client.js"
import type { Input } from "./commandLine.js"
import type { catalogApply, catalogExport, json } from "./commands.js"
import { CliError } from "./errors.js"
import { CliIo } from "./io.js"
import { emit, progress, report } from "./output.js"

const readJson = (file: string) =>
  Effect.gen(function*() {
    const text = yield* Effect.tryPromise({
      try: () => readFile(file, "utf8"),
      catch: (e) => new CliError({ code: "FILE_UNREADABLE", message: `Cannot read ${file}: ${(e as Error).message}` })
    })
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => new CliError({ code: "VALIDATION_ERROR", message: `${file} is not JSON: ${(e as Error).message}` })
    })
  })

/** A yes from the terminal; anything else is a no. */
const confirm = (ask: (question: string) => Promise<string>, question: string) =>
  Effect.promise(() => ask(question)).pipe(Effect.map((answer) => /^y(es)?$/i.test(answer.trim())))

const diffLines = (diff: CatalogDiff): string =>
  (Object.entries(diff) as Array<[string, CatalogDiff["models"]]>)
    .flatMap(([part, d]) => [
      ...d.added.map((id) => `  + ${part.replace(/ies$/, "y").replace(/s$/, "")} ${id}`),
      ...d.removed.map((id) => `  - ${part.replace(/ies$/, "y").replace(/s$/, "")} ${id}`),
      ...d.changed.map((id) => `  ~ ${part.replace(/ies$/, "y").replace(/s$/, "")} ${id}`)
    ])
    .join("\n")

const counts = (diff: CatalogDiff) => {
  const sum = (k: "added" | "removed" | "changed") => Object.values(diff).reduce((n, d) => n + d[k].length, 0)
  return `${sum("added")} added, ${sum("removed")} removed, ${sum("changed")} changed`
}

/**
 * The file checked whole, as the server checks it, by the engine's own rules: the only command that
 * loads the engine, since it has no server to ask.
 */
export const validate = ({ args: [file], options: o }: Input<typeof json>) =>
  Effect.gen(function*() {
    const parsed = yield* readJson(file!)
    const { checkCatalogDocument } = yield* Effect.promise(() => import("genjobs"))
    const doc = yield* Result.match(checkCatalogDocument(parsed), {
      onFailure: (reasons) => Effect.fail(new CliError({ code: "VALIDATION_ERROR", message: `${file} is not a valid catalog`, details: { reasons } })),
      onSuccess: Effect.succeed
    })
    const summary = { valid: true, categories: doc.categories.length, capabilities: doc.capabilities.length, providers: doc.providers.length, models: doc.models.length }
    yield* emit(o.json, summary, () =>
      `${file} is a valid catalog: ${summary.models} models, ${summary.providers} providers, ${summary.categories} categories, ${summary.capabilities} capabilities`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

/** The server checks the file as it compares it (an invalid one is VALIDATION_ERROR with its reasons), so nothing of the engine loads here. */
export const apply = ({ args: [file], options: o }: Input<typeof catalogApply>) =>
  Effect.gen(function*() {
    const doc = yield* readJson(file!)
    const client = yield* adminClient(o)
    yield* progress(o.json, "Comparing with the server's catalog …")
    const preview: { revision: number; unchanged: boolean; diff: CatalogDiff } = yield* client.call("POST", "/admin/catalog/diff", doc)
    const diff = preview.diff
    if (preview.unchanged) {
      return yield* emit(o.json, { applied: false, diff }, () => "The server's catalog already matches the file: nothing to apply")
    }
    yield* progress(o.json, `Changes (${counts(diff)}):\n${diffLines(diff)}`)
    if (!o.yes) {
      const { ask } = yield* Effect.service(CliIo)
      if (o.json || ask === undefined) {
        return yield* Effect.fail(new CliError({ code: "CONFIRMATION_REQUIRED", message: "Not applied: pass --yes to apply without a terminal to ask on" }))
      }
      if (!(yield* confirm(ask, "Apply these changes? [y/N] "))) return yield* Effect.fail(new CliError({ code: "CANCELLED", message: "Not applied" }))
    }
    yield* progress(o.json, "Applying …")
    // Only over the revision the changes above were computed against: what was shown is what is applied.
    const result = yield* client.call("PUT", "/admin/catalog", doc, { "if-match": `"${preview.revision}"` }).pipe(
      Effect.catchIf((e) => e.code === "PRECONDITION_FAILED", (e) =>
        Effect.fail(
          new CliError({
            code: e.code,
            message: `Not applied: the server's catalog changed while you were asked (from revision ${preview.revision}); ` +
              "run apply again to see the changes against it",
            status: e.status,
            requestId: e.requestId,
            details: e.details
          })
        ))
    )
    yield* emit(o.json, { applied: true, revision: result.revision, models: result.models, diff }, () =>
      `Applied: revision ${result.revision}, ${result.models} models (${counts(diff)})`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

export const exportCatalog = ({ options: o }: Input<typeof catalogExport>) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const doc = yield* client.call("GET", "/admin/catalog")
    const text = `${JSON.stringify(doc, null, 2)}\n`
    const target = o.output
    if (target === undefined) return yield* Effect.map(Effect.service(CliIo), (io) => io.stdout(text))
    yield* Effect.tryPromise({
      try: () => writeFile(target, text),
      catch: (e) => new CliError({ code: "FILE_UNWRITABLE", message: `Cannot write ${target}: ${(e as Error).message}` })
    })
    yield* emit(o.json, { file: target, models: doc.models.length }, () => `Wrote the catalog (${doc.models.length} models) to ${target}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))
