import * as Micro from "effect/Micro"
import { adminClient, allPages, query } from "./client.js"
import type { Input } from "./commandLine.js"
import type { accountsCreate, accountsCredit, accountsList } from "./commands.js"
import { dollars, emit, fields, list as listOf, progress, report, table } from "./output.js"

const accountFields = (a: any) =>
  fields([
    ["id", a.id],
    ["name", a.name],
    ["balance", `${dollars(a.balanceMicroCents)} (${a.balanceMicroCents} micro-cents)`],
    ["max concurrent jobs", String(a.maxConcurrentJobs)],
    ["segments", listOf(a.segments)],
    ["allowed models", listOf(a.allowedModels)],
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
  Micro.gen(function*() {
    const client = yield* adminClient(o)
    const account = yield* client.call("POST", "/admin/accounts", {
      name: o.name,
      creditsMicroCents: o.credits,
      ...(o["max-concurrent-jobs"] === undefined ? {} : { maxConcurrentJobs: o["max-concurrent-jobs"] }),
      segments: o.segment,
      allowedModels: o["allow-model"]
    })
    yield* emit(o.json, account, () => `Created account ${account.id}\n${accountFields(account)}`)
  }).pipe(Micro.catchTag("CliError", report(o.json)))

export const list = ({ options: o }: Input<typeof accountsList>) =>
  Micro.gen(function*() {
    const client = yield* adminClient(o)
    if (o.all) {
      const accounts = yield* allPages(client, "/admin/accounts", { search: o.search }, "accounts", (n) => progress(o.json, `… ${n} accounts`))
      return yield* emit(o.json, { accounts }, () => `${accountRows(accounts)}\n${accounts.length} accounts`)
    }
    const page = yield* client.call("GET", `/admin/accounts${query({ search: o.search, limit: o.limit, cursor: o.cursor })}`)
    yield* emit(o.json, page, () =>
      `${accountRows(page.accounts)}${page.hasMore ? `\nMore: --cursor ${page.nextCursor} (or --all)` : ""}`)
  }).pipe(Micro.catchTag("CliError", report(o.json)))

export const credit = ({ args: [id], options: o }: Input<typeof accountsCredit>) =>
  Micro.gen(function*() {
    const client = yield* adminClient(o)
    const account = yield* client.call("POST", `/admin/accounts/${encodeURIComponent(id!)}/credits`, { amountMicroCents: o["micro-cents"] })
    yield* emit(o.json, account, () => `Credited ${dollars(o["micro-cents"])}; balance ${dollars(account.balanceMicroCents)}`)
  }).pipe(Micro.catchTag("CliError", report(o.json)))
