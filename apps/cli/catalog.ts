import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Prompt from "@effect/cli/Prompt"
import { Effect, Either, Option } from "effect"
import type { CatalogDiff } from "genjobs"
import { readFile, writeFile } from "node:fs/promises"
import { adminClient, connection } from "./client.js"
import { CliError } from "./errors.js"
import { emit, progress, report } from "./output.js"

/** The engine's catalog rules, loaded only by the commands that use them. */
const engine = Effect.promise(() => import("genjobs"))

/** The file's document, checked whole as the server would check it. */
const readCatalogFile = (file: string) =>
  Effect.gen(function*() {
    const { checkCatalogDocument } = yield* engine
    const text = yield* Effect.tryPromise({
      try: () => readFile(file, "utf8"),
      catch: (e) => new CliError({ code: "FILE_UNREADABLE", message: `Cannot read ${file}: ${(e as Error).message}` })
    })
    const parsed = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => new CliError({ code: "VALIDATION_ERROR", message: `${file} is not JSON: ${(e as Error).message}` })
    })
    return yield* Either.mapLeft(
      checkCatalogDocument(parsed),
      (reasons) => new CliError({ code: "VALIDATION_ERROR", message: `${file} is not a valid catalog`, details: { reasons } })
    )
  })

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

const file = Args.file({ name: "file", exists: "yes" }).pipe(Args.withDescription("A catalog document (JSON)"))

const validate = Command.make("validate", {
  file,
  json: connection.json
}, (o) =>
  Effect.gen(function*() {
    const doc = yield* readCatalogFile(o.file)
    const summary = { valid: true, categories: doc.categories.length, capabilities: doc.capabilities.length, providers: doc.providers.length, models: doc.models.length }
    yield* emit(o.json, summary, () =>
      `${o.file} is a valid catalog: ${summary.models} models, ${summary.providers} providers, ${summary.categories} categories, ${summary.capabilities} capabilities`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(
    Command.withDescription("Check a catalog file against the catalog schema and rules, without a server")
  )

const apply = Command.make("apply", {
  ...connection,
  file,
  yes: Options.boolean("yes").pipe(Options.withAlias("y"), Options.withDescription("Apply without asking"))
}, (o) =>
  Effect.gen(function*() {
    yield* progress(o.json, `Checking ${o.file} …`)
    const doc = yield* readCatalogFile(o.file)
    const client = yield* adminClient(o)
    yield* progress(o.json, "Comparing with the server's catalog …")
    const preview: { revision: number; unchanged: boolean; diff: CatalogDiff } = yield* client.call("POST", "/admin/catalog/diff", doc)
    const diff = preview.diff
    if (preview.unchanged) {
      return yield* emit(o.json, { applied: false, diff }, () => "The server's catalog already matches the file: nothing to apply")
    }
    yield* progress(o.json, `Changes (${counts(diff)}):\n${diffLines(diff)}`)
    if (!o.yes) {
      if (o.json || !process.stdin.isTTY) {
        return yield* Effect.fail(new CliError({ code: "CONFIRMATION_REQUIRED", message: "Not applied: pass --yes to apply without a terminal to ask on" }))
      }
      const confirmed = yield* Prompt.confirm({ message: "Apply these changes?", initial: false }).pipe(
        Effect.mapError(() => new CliError({ code: "CANCELLED", message: "Not applied" }))
      )
      if (!confirmed) return yield* Effect.fail(new CliError({ code: "CANCELLED", message: "Not applied" }))
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
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(
    Command.withDescription("Replace the server's catalog with a file, after showing what changes")
  )

const exportCommand = Command.make("export", {
  ...connection,
  output: Options.file("output").pipe(Options.withAlias("o"), Options.withDescription("Write to this file instead of stdout"), Options.optional)
}, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const doc = yield* client.call("GET", "/admin/catalog")
    const text = `${JSON.stringify(doc, null, 2)}\n`
    if (Option.isNone(o.output)) return yield* Effect.sync(() => void process.stdout.write(text))
    const target = o.output.value
    yield* Effect.tryPromise({
      try: () => writeFile(target, text),
      catch: (e) => new CliError({ code: "FILE_UNWRITABLE", message: `Cannot write ${target}: ${(e as Error).message}` })
    })
    yield* emit(o.json, { file: target, models: doc.models.length }, () => `Wrote the catalog (${doc.models.length} models) to ${target}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("Write the server's catalog document"))

export const catalog = Command.make("catalog").pipe(
  Command.withDescription("Validate, apply and export the model catalog"),
  Command.withSubcommands([validate, apply, exportCommand])
)
