import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import { Effect, Option } from "effect"
import { adminClient, allPages, connection, query } from "./client.js"
import { dollars, emit, fields, list, progress, report, table } from "./output.js"

const accountFields = (a: any) =>
  fields([
    ["id", a.id],
    ["name", a.name],
    ["balance", `${dollars(a.balanceMicroCents)} (${a.balanceMicroCents} micro-cents)`],
    ["max concurrent jobs", String(a.maxConcurrentJobs)],
    ["segments", list(a.segments)],
    ["allowed models", list(a.allowedModels)],
    ["discounts", list(a.discounts.map((d: any) => `${d.type} ${d.percentage}%${d.models ? ` on ${d.models.join(", ")}` : ""}`))],
    ...(a.webhookSecret === undefined ? [] : [["webhook secret", a.webhookSecret] as const]),
    ["created", a.createdAt]
  ])

const accountRows = (accounts: ReadonlyArray<any>) =>
  table(
    ["ID", "NAME", "BALANCE", "MAX JOBS", "SEGMENTS", "CREATED"],
    accounts.map((a) => [a.id, a.name, dollars(a.balanceMicroCents), String(a.maxConcurrentJobs), list(a.segments), a.createdAt])
  )

const create = Command.make("create", {
  ...connection,
  name: Options.text("name").pipe(Options.withDescription("The account's name")),
  credits: Options.integer("credits").pipe(Options.withDescription("Opening balance in micro-cents (1,000,000 = $1)"), Options.withDefault(0)),
  maxConcurrentJobs: Options.integer("max-concurrent-jobs").pipe(Options.optional),
  segments: Options.text("segment").pipe(Options.repeated, Options.withDescription("A segment (repeat for more)")),
  allowedModels: Options.text("allow-model").pipe(Options.repeated, Options.withDescription("A private model's slug (repeat for more)"))
}, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const account = yield* client.call("POST", "/admin/accounts", {
      name: o.name,
      creditsMicroCents: o.credits,
      ...Option.match(o.maxConcurrentJobs, { onNone: () => ({}), onSome: (n) => ({ maxConcurrentJobs: n }) }),
      segments: o.segments,
      allowedModels: o.allowedModels
    })
    yield* emit(o.json, account, () => `Created account ${account.id}\n${accountFields(account)}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("Create an account"))

const listCommand = Command.make("list", {
  ...connection,
  search: Options.text("search").pipe(Options.withDescription("A fragment of the name or id"), Options.optional),
  limit: Options.integer("limit").pipe(Options.withDescription("Accounts per page (1 to 100)"), Options.withDefault(20)),
  cursor: Options.text("cursor").pipe(Options.withDescription("The next page, as the previous one named it"), Options.optional),
  all: Options.boolean("all").pipe(Options.withDescription("Every page, not just the first"))
}, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const search = Option.getOrUndefined(o.search)
    if (o.all) {
      const accounts = yield* allPages(client, "/admin/accounts", { search }, "accounts", (n) => progress(o.json, `… ${n} accounts`))
      return yield* emit(o.json, { accounts }, () => `${accountRows(accounts)}\n${accounts.length} accounts`)
    }
    const page = yield* client.call("GET", `/admin/accounts${query({ search, limit: o.limit, cursor: Option.getOrUndefined(o.cursor) })}`)
    yield* emit(o.json, page, () =>
      `${accountRows(page.accounts)}${page.hasMore ? `\nMore: --cursor ${page.nextCursor} (or --all)` : ""}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("List accounts, newest first"))

const credit = Command.make("credit", {
  ...connection,
  id: Args.text({ name: "account-id" }),
  amount: Options.integer("micro-cents").pipe(Options.withDescription("How much to add, in micro-cents (1,000,000 = $1)"))
}, (o) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const account = yield* client.call("POST", `/admin/accounts/${encodeURIComponent(o.id)}/credits`, { amountMicroCents: o.amount })
    yield* emit(o.json, account, () => `Credited ${dollars(o.amount)}; balance ${dollars(account.balanceMicroCents)}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))).pipe(Command.withDescription("Add credit to an account through its ledger"))

export const accounts = Command.make("accounts").pipe(
  Command.withDescription("Create, list and credit accounts"),
  Command.withSubcommands([create, listCommand, credit])
)
