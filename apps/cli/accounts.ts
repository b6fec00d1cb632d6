import * as Effect from "effect/Effect"
import { adminClient, allPages, query } from "./client.js"
import type { Input } from "./commandLine.js"
import { budgetText, readBudget } from "./budget.js"
import type { accountsCreate, accountsCredit, accountsList, accountsUpdate } from "./commands.js"
import { CliError } from "./errors.js"
import { dollars, emit, fields, list as listOf, progress, report, table } from "./output.js"

const accountFields = (a: any) =>
  fields([
    ["id", a.id],
    ["name", a.name],
    ["balance", `${dollars(a.balanceMicroCents)} (${a.balanceMicroCents} micro-cents)`],
    ["max concurrent jobs", String(a.maxConcurrentJobs)],
    ["segments", listOf(a.segments)],
    ["allowed models", listOf(a.allowedModels)],
    ["budget", budgetText(a.budget)],
    ["discounts", listOf(a.discounts.map((d: any) => `${d.type} ${d.percentage}%${d.models ? ` on ${d.models.join(", ")}` : ""}`))],
    ...(a.webhookSecret === undefined ? [] : [["webhook secret", a.webhookSecret] as const]),
    ["created", a.createdAt]
  ])

const accountRows = (accounts: ReadonlyArray<any>) =>
  table(
    ["ID", "NAME", "BALANCE", "MAX JOBS", "SEGMENTS", "CREATED"],
    accounts.map((a) => [a.id, a.name, dollars(a.balanceMicroCents), String(a.maxConcurrentJobs), listOf(a.segments), a.createdAt])
  )

export const create = ({ options: o }: Input<typeof accountsCreate>) =>
  Effect.gen(function*() {
    const budget = yield* readBudget(o.budget)
    const client = yield* adminClient(o)
    const account = yield* client.call("POST", "/admin/accounts", {
      name: o.name,
      creditsMicroCents: o.credits,
      ...(o["max-concurrent-jobs"] === undefined ? {} : { maxConcurrentJobs: o["max-concurrent-jobs"] }),
      segments: o.segment,
      allowedModels: o["allow-model"],
      ...(budget === undefined ? {} : { budget })
    })
    yield* emit(o.json, account, () => `Created account ${account.id}\n${accountFields(account)}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

export const list = ({ options: o }: Input<typeof accountsList>) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    if (o.all) {
      const accounts = yield* allPages(client, "/admin/accounts", { search: o.search }, "accounts", (n) => progress(o.json, `… ${n} accounts`))
      return yield* emit(o.json, { accounts }, () => `${accountRows(accounts)}\n${accounts.length} accounts`)
    }
    const page = yield* client.call("GET", `/admin/accounts${query({ search: o.search, limit: o.limit, cursor: o.cursor })}`)
    yield* emit(o.json, page, () =>
      `${accountRows(page.accounts)}${page.hasMore ? `\nMore: --cursor ${page.nextCursor} (or --all)` : ""}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

export const credit = ({ args: [id], options: o }: Input<typeof accountsCredit>) =>
  Effect.gen(function*() {
    const client = yield* adminClient(o)
    const account = yield* client.call("POST", `/admin/accounts/${encodeURIComponent(id!)}/credits`, { amountMicroCents: o["micro-cents"] })
    yield* emit(o.json, account, () => `Credited ${dollars(o["micro-cents"])}; balance ${dollars(account.balanceMicroCents)}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))

/** `genjobs accounts update`: sets what is given (PATCH), leaves the rest. */
export const update = ({ args: [id], options: o }: Input<typeof accountsUpdate>) =>
  Effect.gen(function*() {
    const budget = yield* readBudget(o.budget)
    const patch = {
      ...(o.name === undefined ? {} : { name: o.name }),
      ...(o["max-concurrent-jobs"] === undefined ? {} : { maxConcurrentJobs: o["max-concurrent-jobs"] }),
      ...(budget === undefined ? {} : { budget })
    }
    if (Object.keys(patch).length === 0) {
      return yield* Effect.fail(new CliError({ code: "USAGE", message: "Nothing to change: pass --name, --max-concurrent-jobs or --budget" }))
    }
    const client = yield* adminClient(o)
    const account = yield* client.call("PATCH", `/admin/accounts/${encodeURIComponent(id!)}`, patch)
    yield* emit(o.json, account, () => `Updated account ${account.id}\n${accountFields(account)}`)
  }).pipe(Effect.catchTag("CliError", report(o.json)))
